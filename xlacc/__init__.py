"""xlacc: from a CUDA kernel to a working, fast XLA custom call.

Importing xlacc never imports jax, torch or torch_xla: those run only in child processes
(see ``xlacc.runtime``) or on explicit request (``xlacc doctor`` of the environment).
"""

__version__ = "0.1.0"
