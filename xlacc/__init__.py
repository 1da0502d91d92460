"""xlacc: from a CUDA kernel to a working, fast XLA custom call.

Importing xlacc never imports jax, torch or torch_xla: those run only in child processes
(see ``xlacc.commands.smoke``) or on explicit request (``xlacc doctor`` of the environment).

From Python, in the way of torch's ``cpp_extension.load``::

    import xlacc
    add_op = xlacc.load("add_op")        # builds when stale, imports the op's package
    report = xlacc.build("add_op")       # the Report `xlacc build` renders
    report = xlacc.doctor("add_op")      # the Report `xlacc doctor` renders

The commands' code lives in ``xlacc.commands`` (``xlacc.commands.build``, ``xlacc.commands.doctor``...),
so that these names stay the functions.
"""

from xlacc.ground.version import __version__

__all__ = ["__version__", "build", "doctor", "load"]


def load(project=".", *, force=False):
    """Build the project when stale and import its Python package (see ``xlacc.api.load``)."""
    from xlacc import api

    return api.load(project, force=force)


def build(project=".", *, force=False, arch=None):
    """Build a project when stale (always with ``force``) and verify the library (``xlacc.api.build``)."""
    from xlacc import api

    return api.build(project, force=force, arch=arch)


def doctor(*paths, so=None, log=None, symbols=()):
    """Diagnose sources, folders, projects, a shared object or a log (``xlacc.api.doctor``)."""
    from xlacc import api

    return api.doctor(*paths, so=so, log=log, symbols=symbols)
