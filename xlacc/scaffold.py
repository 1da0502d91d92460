"""`xlacc new`: render a template into a project directory.

A template is a folder under ``templates/`` with a ``template.toml`` (its description and default
signature) and Jinja files; the files every project shares live in ``templates/_common/project``.
Which file is written when is the table ``PROJECT_FILES``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from xlacc import __version__, paths
from xlacc import spec as specmod
from xlacc.errors import UsageError
from xlacc.report import Check, Report
from xlacc.spec import Attr, Spec, Tensor

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMON = "_common"


@dataclass(frozen=True)
class ProjectFile:
    source: str  # template path; "{template}" is the chosen template's folder
    output: str  # path in the project; "{name}" is the op's name
    wanted: Callable[[Spec], bool] = lambda spec: True


PROJECT_FILES: tuple[ProjectFile, ...] = (
    ProjectFile("_common/project/xlacc.toml.j2", "xlacc.toml"),
    ProjectFile("{template}/kernel.cu.j2", "kernel.cu", lambda s: s.platform == "cuda"),
    ProjectFile("{template}/kernel.cc.j2", "kernel.cc", lambda s: s.platform == "cpu"),
    ProjectFile("{template}/reference.py.j2", "reference.py"),
    ProjectFile("_common/project/jax_ops.py.j2", "jax_ops.py", lambda s: "jax" in s.frameworks),
    ProjectFile("_common/project/torch_xla_ops.py.j2", "torch_xla_ops.py", lambda s: "torch-xla" in s.frameworks),
    ProjectFile("_common/project/test_op.py.j2", "test_{name}.py"),
)


@dataclass
class NewRequest:
    name: str
    template: str = "add"
    platform: str = "cuda"
    api: str = "ffi"
    frameworks: list[str] = field(default_factory=lambda: ["jax", "torch-xla"])
    directory: Path | None = None
    target: str | None = None
    dtypes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)
    dry_run: bool = False
    force: bool = False


# -- templates ----------------------------------------------------------------------------------


def templates_root() -> Path:
    """Templates ship inside the wheel as ``xlacc/templates``; a source checkout has them at the top."""
    packaged = Path(__file__).resolve().parent / "templates"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "templates"
    if checkout.is_dir():
        return checkout
    raise UsageError("xlacc's templates are missing from this installation: reinstall xlacc")


def available_templates() -> dict[str, dict[str, Any]]:
    root = templates_root()
    return {
        d.name: tomllib.loads((d / "template.toml").read_text(encoding="utf-8"))
        for d in sorted(root.iterdir())
        if d.is_dir() and d.name != COMMON and (d / "template.toml").is_file()
    }


def _template_meta(name: str) -> dict[str, Any]:
    templates = available_templates()
    if name not in templates:
        raise UsageError(f"unknown template {name!r}; available: {', '.join(templates)}")
    return templates[name]


# -- the spec of a new project ---------------------------------------------------------------


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise UsageError(f"invalid {what} {value!r}; use one of: {', '.join(allowed)}")
    return value


def _dtypes(values: list[str], default: list[str]) -> tuple[str, ...]:
    dtypes = tuple(dict.fromkeys(values or default))
    for d in dtypes:
        _choice(d, specmod.DTYPES, "dtype")
    return dtypes


def _tensor_dtypes(declared: str | None, op_dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """A template or flag names a concrete dtype, or "T" (or nothing): the op's element type(s)."""
    if declared in (None, "", "T"):
        return op_dtypes
    return (_choice(declared, specmod.DTYPES, "dtype"),)


def _tensor_from_meta(raw: dict[str, Any], op_dtypes: tuple[str, ...], is_output: bool) -> Tensor:
    shape = raw.get("shape")
    like = shape if isinstance(shape, str) else None
    dims = tuple(shape) if isinstance(shape, list) else None
    return Tensor(raw["name"], _tensor_dtypes(raw.get("dtype"), op_dtypes), None if is_output and like else dims, like)


def _parse_flag_tensor(text: str, op_dtypes: tuple[str, ...], like: str | None) -> Tensor:
    """``NAME`` or ``NAME:DTYPE`` (DTYPE "T" = the op's element type)."""
    name, _, dtype = text.partition(":")
    specmod.check_member_name(name.strip(), "tensor name")
    return Tensor(name.strip(), _tensor_dtypes(dtype.strip() or None, op_dtypes), None, like)


def _parse_flag_attr(text: str) -> Attr:
    """``NAME:TYPE`` or ``NAME:TYPE=DEFAULT``."""
    name, _, rest = text.partition(":")
    declared_type, _, default = rest.partition("=")
    specmod.check_member_name(name.strip(), "attribute name")
    attr_type = _choice(declared_type.strip() or "f32", specmod.ATTR_TYPES, "attribute type")
    value: float | int | None = None
    if default.strip():
        try:
            value = int(default) if attr_type.startswith("i") else float(default)
        except ValueError:
            raise UsageError(f"invalid default {default!r} for attribute {name}: expected a {attr_type} number") from None
    return Attr(name.strip(), attr_type, value)


def _signature(request: NewRequest, meta: dict[str, Any], op_dtypes: tuple[str, ...]):
    if request.inputs or request.outputs or request.attrs:
        if request.template != "blank":
            raise UsageError("--input/--output/--attr shape the 'blank' template only; the others have a fixed signature")
        inputs = tuple(_parse_flag_tensor(t, op_dtypes, None) for t in request.inputs or ["x"])
        outputs = tuple(_parse_flag_tensor(t, op_dtypes, inputs[0].name) for t in request.outputs or ["y"])
        attrs = tuple(_parse_flag_attr(a) for a in request.attrs)
        return inputs, outputs, attrs
    inputs = tuple(_tensor_from_meta(t, op_dtypes, False) for t in meta.get("inputs", []))
    outputs = tuple(_tensor_from_meta(t, op_dtypes, True) for t in meta.get("outputs", []))
    attrs = tuple(Attr(a["name"], a["type"], a.get("default")) for a in meta.get("attrs", []))
    return inputs, outputs, attrs


def spec_for(request: NewRequest) -> tuple[Spec, dict[str, Any]]:
    """Validate the request and build the project's Spec (nothing is written)."""
    name = specmod.check_identifier(request.name, "name")
    meta = _template_meta(request.template)
    platform = _choice(request.platform, specmod.PLATFORMS, "platform")
    if platform not in meta.get("platforms", specmod.PLATFORMS):
        raise UsageError(f"template {request.template!r} supports --platform {', '.join(meta['platforms'])} only")
    api = _choice(request.api, specmod.APIS, "api")
    frameworks = tuple(_choice(f, specmod.FRAMEWORKS, "framework") for f in (request.frameworks or ["jax"]))
    op_dtypes = _dtypes(request.dtypes, meta.get("dtypes", ["f32"]))
    inputs, outputs, attrs = _signature(request, meta, op_dtypes)
    directory = Path(request.directory) if request.directory else Path(name)
    spec = Spec(
        name=name,
        target=specmod.check_target(request.target or name),
        template=request.template,
        platform=platform,
        api=api,
        frameworks=frameworks,
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        sources=("kernel.cu" if platform == "cuda" else "kernel.cc",),
        root=directory.resolve(),
    )
    return spec, meta


# -- rendering ------------------------------------------------------------------------------------


def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_root())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
        autoescape=False,
    )


def render(spec: Spec, meta: dict[str, Any]) -> dict[str, str]:
    """Project-relative path -> file text, for every file the spec calls for."""
    env = _environment()
    context = {
        "spec": spec,
        "template_meta": {"vmap_method": "sequential", **meta},
        "dtype_info": specmod.DTYPE_INFO,
        "dtypes": specmod.DTYPES,
        "version": __version__,
    }
    files = {}
    for entry in PROJECT_FILES:
        if entry.wanted(spec):
            source = entry.source.format(template=spec.template)
            files[entry.output.format(name=spec.name)] = env.get_template(source).render(context)
    _self_check(spec, files)
    return files


def _self_check(spec: Spec, files: dict[str, str]) -> None:
    """A generated project must read back as the same spec and hold valid Python."""
    reread = specmod.from_dict(tomllib.loads(files["xlacc.toml"]), spec.root / specmod.SPEC_FILE)
    if replace(reread, root=spec.root) != spec:
        raise AssertionError(f"template bug: xlacc.toml does not read back as the spec ({reread} != {spec})")
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")


# -- writing ----------------------------------------------------------------------------------------


def _refuse_overwrite(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory; nothing was written")
    if directory.is_dir() and any(directory.iterdir()):
        raise UsageError(f"{directory} is not empty; nothing was written (use --force to overwrite xlacc's files there)")


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create(request: NewRequest) -> Report:
    spec, meta = spec_for(request)
    files = render(spec, meta)
    directory = spec.root
    if not request.force and not request.dry_run:
        _refuse_overwrite(directory)
    verb = "would write" if request.dry_run else "wrote"
    report = Report(title=f"xlacc new {spec.name} (template {spec.template}, {spec.platform}, {spec.api}, {', '.join(spec.frameworks)})")
    for relative, text in files.items():
        path = directory / relative
        existed = path.exists()
        action = f"{verb} (overwrote)" if existed and request.force else verb
        report.add(Check(str(Path(request.directory or spec.name) / relative), True, f"{action}, {len(text.splitlines())} lines"))
    if not request.dry_run:
        paths.write_all(directory, files)
    report.data.update({"project": str(directory), "files": list(files), "dry_run": request.dry_run})
    if not request.dry_run:
        report.notes.append(f"next: cd {Path(request.directory or spec.name)} && xlacc build && xlacc run-smoke")
    return report
