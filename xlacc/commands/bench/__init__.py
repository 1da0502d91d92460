"""``xlacc bench``: the op against XLA's own implementation and the best peer, timed in one child
process, with spread, a roofline and a chart.

The parent side (``command``, ``output``, ``chart``, ``stats``, ``cards``) imports no jax; the child
(``harness``, ``timing``, ``peers``, ``attention_peers``) runs under ``python -m xlacc.commands.bench.harness``.
"""
