"""xlacc: from a CUDA kernel to a working, fast XLA custom call.

Importing xlacc never imports jax, torch or torch_xla: those run only in child processes
(see ``xlacc.runtime``) or on explicit request (``xlacc doctor`` of the environment).

From Python: ``xlacc.load(DIR)`` builds a project when stale and returns its package; the
functions of ``xlacc.api`` return what the command line renders.
"""

__version__ = "0.2.0"


def load(project=".", *, force=False):
    """Build the project when stale and import its Python package (see ``xlacc.api.load``)."""
    from xlacc import api

    return api.load(project, force=force)
