"""``xlacc run-smoke``: prove a project's custom call works, each framework in its own child process.

    run_smoke.py        the command: build when stale, run each harness, turn its records into checks
    runner.py           start a harness as a child Python process with a timeout; collect what happened
    records.py          the channel from a harness to xlacc: JSON lines in a file
    harness*.py         the children (jax, torchax, torch_xla, and the jax transform checks): the only
                        modules of xlacc that import jax or torch
    numerics.py         outputs against the reference, with tolerances by dtype
    xla_program.py      the program torch_xla emits, run through jaxlib's XLA
"""
