"""xlacc from Python, for notebooks and build scripts, in the way of torch's ``cpp_extension.load``.

    import xlacc
    add_op = xlacc.load("add_op")             # builds when stale, imports the op's package
    out = add_op.jax.add_op(x, y)

``build`` and ``doctor`` return the Report the command line renders (``report.failed``,
``report.checks``, ``report.findings``, ``report.to_dict()``, and ``report.to_json()``: the text
``--json`` prints).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from xlacc.ground.errors import UsageError, XlaccError
from xlacc.ground.report import Report


class BuildError(XlaccError):
    """``load`` could not build the library; ``report`` holds the compiler's errors."""

    def __init__(self, report: Report):
        lines = [f"{f.code}: {f.title}\n{f.evidence}" for f in report.findings if f.severity == "error"]
        super().__init__(f"{report.title} failed\n" + "\n".join(lines))
        self.report = report


def build(project: str | Path = ".", *, force: bool = False, arch: str | None = None) -> Report:
    """Build a project (when its cache is stale, or always with ``force``) and verify the library."""
    from xlacc.commands.build import builder  # lazy: `import xlacc` stays light

    return builder.run(builder.BuildRequest(paths=[_project_path(project)], archs=arch, force=force))


class LoadError(XlaccError):
    """``load`` cannot give the package asked for in this process (another project's op of the same
    name is loaded, or the library was rebuilt under a module that still runs the old one)."""


@dataclass(frozen=True)
class _Loaded:
    root: Path
    library: tuple[int, int, int]  # inode, size, mtime_ns of the library the package loads


_LOADED: dict[str, _Loaded] = {}  # package name -> the project it came from, in this process


def load(project: str | Path = ".", *, force: bool = False) -> ModuleType:
    """Build the project when stale and import its Python package (``NAME``, with ``NAME.jax`` and
    ``NAME.torch`` importing on first use). Raises BuildError when the build fails, and LoadError
    when this process already holds another project's op of that name or an older build of this
    one (a loaded library cannot be replaced: the process must restart to run the new kernel)."""
    from xlacc import spec as spec_mod  # lazy: `import xlacc` stays light

    spec = spec_mod.load(_project_path(project))
    root = spec.root.resolve()
    _refuse_another_project(spec.package, root)
    report = build(root, force=force)
    if report.failed:
        raise BuildError(report)
    library = _stamp(spec.library)
    loaded = _LOADED.get(spec.package)
    if loaded is not None and loaded.library != library and spec.package in sys.modules:
        raise LoadError(
            f"{spec.package}: {spec.library} was rebuilt after this process loaded it; the loaded module still runs "
            "the old kernel and a library cannot be unloaded: restart the Python process (in a notebook, the kernel)"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    module = importlib.import_module(spec.package)
    _LOADED[spec.package] = _Loaded(root, library)
    return module


def _refuse_another_project(package: str, root: Path) -> None:
    """An op's package is imported by its name: a second project's op of that name cannot live in
    the same process next to the first."""
    loaded = _LOADED.get(package)
    module = sys.modules.get(package)
    first = loaded.root if loaded else _project_of(module)
    if first is not None and first != root:
        raise LoadError(
            f"{package}: this process already loaded the op {package!r} from {first}; {root} holds another op of "
            "that name. Rename one (xlacc.toml [op] name, then `xlacc update`), or load it in another process"
        )


def _project_of(module: ModuleType | None) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve().parent.parent if file else None


def _stamp(library: Path) -> tuple[int, int, int]:
    status = library.stat()
    return status.st_ino, status.st_size, status.st_mtime_ns


def _project_path(project: str | Path) -> Path:
    """The project's absolute path; a one-line error where a relative one cannot be resolved (the
    current folder was deleted)."""
    path = Path(project)
    if path.is_absolute():
        return path
    try:
        return Path.cwd() / path
    except FileNotFoundError:
        raise UsageError(f"the current folder no longer exists, so {str(path)!r} cannot be found: pass the project's absolute path") from None


def doctor(*paths: str | Path, so: str | Path | None = None, log: str | Path | None = None, symbols: tuple[str, ...] = ()) -> Report:
    """Diagnose sources, folders or projects, a shared object, a log; the environment with no argument."""
    from xlacc.commands.doctor import engine  # lazy: `import xlacc` stays light

    request = engine.DoctorRequest([_project_path(p) for p in paths], so=Path(so) if so else None, symbols=list(symbols), log=str(log) if log else None)
    return engine.run(request)
