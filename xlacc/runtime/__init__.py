"""Running custom calls away from xlacc's own process.

``runner`` starts a harness (``harness_jax``, ``harness_torchax``, ``harness_torch_xla``) as a child
Python process with a timeout and collects its output, exit status and records (``records``: JSON
lines in a file). The harnesses import jax, torch, torchax or torch_xla (``xla_program`` runs
torch_xla's programs through jaxlib); nothing else in xlacc does at import time.
"""

from xlacc.runtime.runner import ChildResult, run_child, run_harness

__all__ = ["ChildResult", "run_child", "run_harness"]
