"""`xlacc new`: render a template into a project.

A template is a folder under ``templates/`` with a ``template.toml`` (its description and default
signature) and Jinja files; the files every project shares live in ``templates/_common/project``.
Which file is written, and whose it is, is the table ``PROJECT_FILES``: the user's files hold the
user's code (the kernel, the reference, the tests, the spec); xlacc's are regenerated from the spec
by ``xlacc update``. Every file's text as written is recorded (``xlacc.commands.new.record``), so that neither
``new --force`` nor ``update`` ever loses an edit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xlacc import spec as specmod
from xlacc.commands.new import record as generated
from xlacc.commands.new import transform_plan as transforms
from xlacc.ground import locks, paths, resources
from xlacc.ground.errors import SpecError, UsageError
from xlacc.ground.report import Check, Report
from xlacc.ground.wording import counted
from xlacc.ground.version import __version__
from xlacc.readers import cxx_tokens
from xlacc.readers.cxx_macros import arch_specific_guards
from xlacc.spec import Spec, sharding

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMON = "_common"
WRAP_TEMPLATE = "from"  # xlacc new --from: the user's own kernel
USER = "yours"
XLACC = "xlacc's"
RECORD_ROLE = "the record: what xlacc wrote, to tell your edits from its own (commit .xlacc/)"


@dataclass(frozen=True)
class ProjectFile:
    source: str  # template path; "{template}" is the chosen template's folder, "{suffix}" .cu or .cc
    output: str  # path in the project; "{name}", "{package}", "{kernel}", "{entry}" from the spec
    owner: str  # USER: the user's code, merged on update; XLACC: regenerated from the spec
    role: str
    wanted: Callable[[Spec], bool] = lambda spec: True

    def path(self, spec: Spec) -> str:
        return self.output.format(name=spec.name, package=spec.package, kernel=spec.kernel_file, entry=spec.entry_file)


PROJECT_FILES: tuple[ProjectFile, ...] = (
    ProjectFile("_common/project/xlacc.toml.j2", specmod.SPEC_FILE, USER, "the op: its signature and build settings"),
    ProjectFile("{template}/kernel{suffix}.j2", "{kernel}", USER, "the kernel and its launch function"),
    ProjectFile("{template}/reference.py.j2", "{package}/reference.py", USER, "what the op computes, and example inputs"),
    ProjectFile("_common/project/test_op.py.j2", "test_{name}.py", USER, "tests against the reference"),
    ProjectFile("_common/project/entry_points.j2", "{entry}", XLACC, "the entry points XLA calls; include the kernel"),
    ProjectFile("_common/project/init.py.j2", "{package}/__init__.py", XLACC, "the package: library path, dtypes"),
    ProjectFile("_common/project/testing.py.j2", "{package}/testing.py", XLACC, "test data and tolerances"),
    ProjectFile("_common/project/checks.py.j2", "{package}/checks.py", XLACC, "the generic checks the tests import (sharding, vmap, grad)"),
    ProjectFile("_common/project/jax.py.j2", "{package}/jax.py", XLACC, "JAX bindings (jax.ffi)", lambda s: s.uses_jax_module),
    ProjectFile(
        "_common/project/jax_transforms.py.j2", "{package}/_jax_transforms.py", XLACC, "sharding, vmap and grad for JAX",
        lambda s: s.uses_jax_module,
    ),
    ProjectFile(
        "_common/project/torch.py.j2", "{package}/torch.py", XLACC, "PyTorch bindings (torchax, torch_xla)", lambda s: s.uses_torch_module
    ),
    ProjectFile(
        "{template}/decode_torchax.py.j2",
        "decode_torchax.py",
        USER,
        "a decode step from PyTorch through torchax, as vLLM's TPU backend runs one",
        lambda s: s.template == "paged-attention" and "torchax" in s.frameworks,
    ),
    ProjectFile("_attention/paged_cache.py.j2", "{package}/paged_cache.py", XLACC, "the model path's paged KV cache", lambda s: _serves_models(s)),
    ProjectFile(
        "_attention/model_adapter.py.j2", "{package}/model_adapter.py", XLACC, "the model path's attention adapter and weights",
        lambda s: _serves_models(s),
    ),
    ProjectFile("_attention/model.py.j2", "{package}/model.py", XLACC, "a transformers model served with the op", lambda s: _serves_models(s)),
    ProjectFile("_attention/serve.py.j2", "serve_{name}.py", USER, "serve or benchmark a model with the op", lambda s: _serves_models(s)),
    ProjectFile("_common/project/pyproject.toml.j2", "pyproject.toml", XLACC, "`pip install --no-build-isolation .`"),
    ProjectFile("_common/project/gitignore.j2", ".gitignore", XLACC, "build outputs"),
)


def _serves_models(spec: Spec) -> bool:
    """An attention template ([model] in its template.toml) gets the model path, which calls the op from jax."""
    return spec.uses_jax_module and model_attention(spec.template) is not None


def model_attention(template: str) -> str | None:
    """"decode" or "ragged": how the template's op attends ([model] attention in template.toml); None for other ops."""
    try:
        return template_meta(template).get("model", {}).get("attention")
    except UsageError:
        return None


@dataclass
class NewRequest:
    name: str
    template: str = "add"
    platform: str = "cuda"
    api: str = "ffi"
    frameworks: list[str] = field(default_factory=lambda: list(specmod.DEFAULT_FRAMEWORKS))
    directory: Path | None = None
    target: str | None = None
    dtypes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)
    dry_run: bool = False
    force: bool = False
    from_file: Path | None = None  # --from: wrap this kernel file, left unchanged
    kernel: str | None = None  # --kernel: the function to wrap when the file has several
    sizes: list[str] = field(default_factory=list)  # --size NAME=INPUT.size|INPUT.shape[K]|N
    include_dirs: list[Path] = field(default_factory=list)  # --include DIR: where the kernel's includes are searched
    accept_guesses: bool = False  # --accept-guesses: take every guess wrap makes


# -- templates ----------------------------------------------------------------------------------


def available_templates() -> dict[str, dict[str, Any]]:
    """The templates `xlacc new --template` offers (the wrapper of `--from` is not one of them)."""
    root = resources.templates_root()
    return {
        d.name: _read_meta(d)
        for d in sorted(root.iterdir())
        if d.is_dir() and d.name not in (COMMON, WRAP_TEMPLATE) and (d / "template.toml").is_file()
    }


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / "template.toml"
    return _parsed_meta(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _parsed_meta(path: Path, mtime_ns: int) -> dict[str, Any]:
    """One parse per file and version: rendering a project asks each file's template for it."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def template_meta(name: str) -> dict[str, Any]:
    """A template's template.toml (shared: do not change it)."""
    root = resources.templates_root()
    if name == WRAP_TEMPLATE or (name != COMMON and name in os.listdir(root) and (root / name / "template.toml").is_file()):
        return _read_meta(root / name)
    raise UsageError(f"unknown template {name!r}; available: {', '.join(available_templates())}")


# -- the spec of a new project: flags -> the same table xlacc.toml holds -> spec.from_dict ------


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise UsageError(f"invalid {what} {value!r}; use one of: {', '.join(allowed)}")
    return value


def _check_template_dtypes(template: str, meta: dict[str, Any], dtypes: list[str]) -> None:
    """A template's kernel is written for some element types (``supported_dtypes`` in its
    template.toml; all where it names none): any other would give a project that cannot build."""
    supported = meta.get("supported_dtypes", specmod.DTYPES)
    unsupported = [d for d in dtypes if d not in supported]
    if unsupported:
        raise UsageError(f"--dtype {','.join(unsupported)}: the {template} template's kernel is written for {', '.join(supported)} only; nothing was written")


def _flag_tensor(text: str) -> dict[str, Any]:
    """``--input NAME`` or ``NAME:DTYPE`` (DTYPE "T" or nothing: the op's element type)."""
    name, _, dtype = text.partition(":")
    entry: dict[str, Any] = {"name": name.strip()}
    if dtype.strip() not in ("", "T"):
        entry["dtype"] = dtype.strip()
    return entry


def _flag_attr(text: str) -> dict[str, Any]:
    """``--attr NAME:TYPE`` or ``NAME:TYPE=DEFAULT``."""
    name, _, rest = text.partition(":")
    attr_type, _, default = rest.partition("=")
    entry: dict[str, Any] = {"name": name.strip(), "type": _choice(attr_type.strip() or "f32", specmod.ATTR_TYPES, f"--attr {text!r} type")}
    if default.strip():
        try:
            if not default.isascii():
                raise ValueError
            entry["default"] = int(default) if entry["type"].startswith("i") else float(default)
        except ValueError:
            raise UsageError(f"invalid --attr {text!r}: the default must be a {entry['type']} number") from None
    return entry


def _signature(request: NewRequest, meta: dict[str, Any]) -> tuple[list[dict], list[dict], list[dict]]:
    """Inputs, outputs and attributes as xlacc.toml tables, from the flags or the template."""
    if _from_flags(request):
        if request.template != "blank":
            raise UsageError("--input/--output/--attr shape the 'blank' template only; the others have a fixed signature")
        inputs = [_flag_tensor(t) for t in request.inputs or ["x"]]
        outputs = [{**_flag_tensor(t), "shape": inputs[0]["name"]} for t in request.outputs or ["y"]]
        return inputs, outputs, [_flag_attr(a) for a in request.attrs]
    return [dict(t) for t in meta.get("inputs", [])], [dict(t) for t in meta.get("outputs", [])], [dict(a) for a in meta.get("attrs", [])]


def _from_flags(request: NewRequest) -> bool:
    return bool(request.inputs or request.outputs or request.attrs)


def _transforms(request: NewRequest, meta: dict[str, Any], n_inputs: int, n_outputs: int) -> dict[str, Any]:
    """The template's [sharding] and [backward] tables; a blank op from flags is elementwise, as its stub."""
    tables = {key: meta[key] for key in ("sharding", "backward") if key in meta}
    if _from_flags(request):
        tables["sharding"] = {"rule": sharding.elementwise(n_inputs, n_outputs)}
    return tables


def spec_for(request: NewRequest) -> tuple[Spec, dict[str, Any]]:
    """Validate the request and build the project's Spec (nothing is written)."""
    specmod.check_op_name(request.name)
    if request.from_file is not None:
        return _wrapped_spec_for(request)
    if request.template == WRAP_TEMPLATE:
        raise UsageError(f"the {WRAP_TEMPLATE!r} template wraps a kernel you have: xlacc new NAME --from FILE.cu [--kernel FUNC]")
    if request.kernel or request.sizes or request.include_dirs or request.accept_guesses:
        raise UsageError("--kernel, --size, --include and --accept-guesses go with --from FILE")
    meta = template_meta(request.template)
    platform = _choice(request.platform, specmod.PLATFORMS, "platform")
    if platform not in meta.get("platforms", specmod.PLATFORMS):
        raise UsageError(f"template {request.template!r} supports --platform {', '.join(meta['platforms'])} only")
    op_dtypes = list(dict.fromkeys(request.dtypes or meta.get("dtypes", ["f32"])))
    for d in op_dtypes:
        _choice(d, specmod.DTYPES, "dtype")
    _check_template_dtypes(request.template, meta, op_dtypes)
    inputs, outputs, attrs = _signature(request, meta)
    for tensor in inputs + outputs:
        tensor.setdefault("dtype", op_dtypes if len(op_dtypes) > 1 else op_dtypes[0])
        if tensor["dtype"] == "T":
            tensor["dtype"] = op_dtypes if len(op_dtypes) > 1 else op_dtypes[0]
    directory = Path(request.directory) if request.directory else Path(request.name)
    gpu_build = meta.get("build", {}) if platform == "cuda" else {}  # the template's [build] (arch_specific)
    raw = {
        "op": {
            "name": request.name,
            "target": request.target or request.name,
            "template": request.template,
            "platform": platform,
            "api": _choice(request.api, specmod.APIS, "api"),
            "frameworks": list(request.frameworks or ["jax"]),
        },
        "inputs": inputs,
        "outputs": outputs,
        "attrs": attrs,
        "build": {"kernel": f"kernel{specmod.SOURCE_SUFFIX[platform]}", **gpu_build},
        **_transforms(request, meta, len(inputs), len(outputs)),
    }
    return _validated(raw, directory), meta


def _validated(raw: dict[str, Any], directory: Path, origin_of: Callable[[str], str] | None = None) -> Spec:
    """The spec the flags describe, through the one validator every xlacc.toml goes through;
    ``origin_of``: what a spec key came from, for the message (default: the flag)."""
    try:
        return specmod.from_dict(raw, directory.resolve() / specmod.SPEC_FILE)
    except SpecError as exc:
        raise UsageError(f"{(origin_of or _flag_for)(exc.key)}: {exc.message}") from None


def _wrapped_spec_for(request: NewRequest) -> tuple[Spec, dict[str, Any]]:
    """`--from FILE`: the signature read from the user's kernel (xlacc/commands/new/wrap.py)."""
    from xlacc.commands.new import wrap, wrap_request  # lazy: the C++ reader, only for --from

    source = Path(request.from_file)
    platform = wrap_request.check_source(source)
    op_dtypes = list(dict.fromkeys(request.dtypes or ["f32"]))
    directory = Path(request.directory) if request.directory else Path(request.name)
    include_dirs = wrap_request.include_dirs(request.include_dirs)
    sizes = wrap.parse_sizes(request.sizes)
    defaults = {a["name"]: a for a in (_flag_attr(text) for text in request.attrs)}
    likes = dict(_flag_like(o) for o in request.outputs)
    wrapped = wrap.read(source, request.kernel, sizes, set(defaults), include_dirs=include_dirs, likes=likes, questions_ok=True)
    if wrapped.questions and not request.accept_guesses:
        raise wrap_request.questions_error(request, wrapped)
    generic = op_dtypes if len(op_dtypes) > 1 else op_dtypes[0]
    likes = {**wrapped.likes, **likes}
    inputs = [{"name": a.name, "dtype": generic if a.dtype == "T" else a.dtype} for a in wrapped.tensors("input")]
    if not inputs:
        raise UsageError(f"--from {source}: {wrapped.function} takes no const pointer, so no input: xlacc ops take at least one")
    outputs = [
        {"name": a.name, "dtype": generic if a.dtype == "T" else a.dtype, "shape": likes.pop(a.name, inputs[0]["name"])}
        for a in wrapped.tensors("output")
    ] + [{"name": f"{a.name}_out", "dtype": generic if a.dtype == "T" else a.dtype, "alias": a.name} for a in wrapped.in_place()]
    if likes:
        raise UsageError(f"--output {next(iter(likes))}: {wrapped.function} has no output of that name")
    attrs = [{"name": a.name, "type": a.dtype, **_default_of(defaults.pop(a.name, {}))} for a in wrapped.attrs()]
    if defaults:
        raise UsageError(f"--attr {next(iter(defaults))}: {wrapped.function} has no scalar parameter of that name")
    origin = os.path.relpath(source.resolve(), directory.resolve())
    searched = [os.path.dirname(origin) or "."] + [os.path.relpath(d, directory.resolve()) for d in include_dirs]
    raw = {
        "op": {"name": request.name, "target": request.target or request.name, "template": WRAP_TEMPLATE, "platform": platform,
               "api": _choice(request.api, specmod.APIS, "api"), "frameworks": list(request.frameworks or ["jax"])},
        "inputs": inputs,
        "outputs": outputs,
        "attrs": attrs,
        "build": {"kernel": f"launch{specmod.SOURCE_SUFFIX[platform]}", "include_dirs": list(dict.fromkeys(searched)), **_arch_specific(source, platform)},
        "from": {"file": origin, "kernel": wrapped.function, "sizes": wrapped.sizes},
    }  # fmt: skip
    def origin_of(key: str) -> str:  # the operands are the kernel's parameters, not flags
        if key.startswith(("inputs", "outputs", "attrs")) and key.endswith(".name"):
            return f"--from {source}: a parameter of {wrapped.function}"
        return _flag_for(key)

    return _validated(raw, directory, origin_of), template_meta(WRAP_TEMPLATE)


def _arch_specific(source: Path, platform: str) -> dict[str, bool]:
    """``arch_specific = true`` for a kernel with code only an arch-specific target compiles
    (``#if __CUDA_ARCH_FEAT_SM90_ALL``), so that auto archs build it (sm_90a on an H100)."""
    return {"arch_specific": True} if platform == "cuda" and arch_specific_guards(source.read_bytes()) else {}


def _default_of(attr: dict[str, Any]) -> dict[str, Any]:
    """The default an --attr flag gives a wrapped kernel's scalar; its type comes from the kernel."""
    return {"default": attr["default"]} if "default" in attr else {}


def _flag_like(text: str) -> tuple[str, str]:
    """``--output NAME:like=INPUT`` for a wrapped kernel."""
    name, _, rest = text.partition(":")
    key, eq, like = rest.partition("=")
    if key.strip() != "like" or not eq:
        raise UsageError(f"--output {text!r}: with --from, give NAME:like=INPUT (the output is shaped like that input)")
    return name.strip(), like.strip()


def _flag_for(key: str) -> str:
    """The command-line flag a spec key came from, for error messages."""
    for prefix, flag in (("inputs", "--input"), ("outputs", "--output"), ("attrs", "--attr"), ("op.target", "--target")):
        if key.startswith(prefix):
            return flag
    return {"op.name": "NAME", "op.platform": "--platform", "op.api": "--api", "op.frameworks": "--framework"}.get(key, key)


# -- rendering ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _environment(root: str):
    """One per templates folder: jinja keeps the templates it compiled (90% of a render) and reloads
    a file that changed."""
    import jinja2  # lazy: jinja2 takes 43 ms to import; build and update import this module without rendering

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=_bytecode_cache(jinja2),
    )
    env.filters["pyrepr"] = repr  # a Python literal: tuples of names, strings with their quotes
    env.filters["toml"] = toml_value
    return env


def _bytecode_cache(jinja2):
    """The templates compiled once per user, not on every `new` (most of its time): jinja's
    bytecode in $XDG_CACHE_HOME/xlacc/jinja (~/.cache/...), keyed by each template's text. A
    folder that cannot be made or written only costs the compile."""

    class Tolerant(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            with contextlib.suppress(OSError, EOFError, ValueError):
                super().load_bytecode(bucket)

        def dump_bytecode(self, bucket) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "xlacc", "jinja")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return Tolerant(folder) if os.access(folder, os.W_OK | os.X_OK) else None


def toml_value(value: Any) -> str:
    """A TOML literal (tomllib only reads TOML). A JSON string is a TOML basic string once DEL, which
    JSON leaves bare, is escaped too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return repr(value)


def files_for(spec: Spec) -> list[tuple[ProjectFile, str]]:
    """The project files the spec calls for, with their paths."""
    return [(entry, entry.path(spec)) for entry in PROJECT_FILES if entry.wanted(spec)]


def owner_of(spec: Spec, path: str) -> str:
    return next((entry.owner for entry, p in files_for(spec) if p == path), USER)


def render(spec: Spec, meta: dict[str, Any]) -> dict[str, str]:
    """Project-relative path -> file text, for every file the spec calls for."""
    return _render(spec, meta, _wrapped_context(spec))


def _render(spec: Spec, meta: dict[str, Any], wrapped: dict[str, Any], only: set[str] | None = None) -> dict[str, str]:
    """``render`` with the wrapped kernel's call already read; ``only`` these paths (unchecked)."""
    env = _environment(str(resources.templates_root()))
    context = {
        **wrapped,
        "spec": spec,
        "template_meta": meta,
        "dtype_info": specmod.DTYPE_INFO,
        "dtypes": specmod.DTYPES,
        "tolerances": specmod.TOLERANCES,
        "version": __version__,
        "transforms": {
            "sharding": transforms.describe_sharding(spec),
            "shard_map": transforms.shard_map_example(spec),
            "vmap": transforms.describe_vmap(spec),
            "grad": transforms.describe_grad(spec),
            "no_backward": transforms.no_backward_message(spec),
        },
        "uses": _transforms_used(spec),
        "splits": {s.factor: (s.dims, s.result_dims) for s in transforms.splits(spec)},
        "batched": transforms.folding_inputs(spec) or (),
        "shape_checks": shape_checks(spec, meta),
    }
    files = {}
    for entry, path in files_for(spec):
        if only is None or path in only:
            source = entry.source.format(template=spec.template, suffix=spec.suffix)
            files[path] = env.get_template(source).render(context)
    if only is None:
        _self_check(spec, files)
    return files


def _transforms_used(spec: Spec) -> dict[str, bool]:
    """Which parts of NAME/_jax_transforms.py the op's rules need: the file holds only those."""
    rules = [call.rule for call in spec.calls if call.rule is not None]
    entries = [entry for rule in rules for entry in rule.operands + rule.results]
    return {
        "sharded": bool(rules),
        "whole": bool(spec.sharding and spec.sharding.whole),
        "compounds": any(isinstance(factor, tuple) for entry in entries for factor in entry),
    }


def _wrapped_context(spec: Spec) -> dict[str, Any]:
    """A wrapped kernel's call, read again from its file (so `xlacc update` follows it too)."""
    if spec.origin is None:
        return {}
    from xlacc.commands.new import wrap  # lazy: the C++ reader, only for a wrapped kernel

    path = Path(os.path.normpath(spec.root / spec.origin.file))  # the project may not exist yet
    return {
        "wrapped": wrap.read(path, spec.origin.function, dict(spec.origin.sizes), {a.name for a in spec.attrs}, **wrap.spec_context(spec)),
        "origin_include": Path(spec.origin.file).name,
        "threads": wrap.THREADS,
    }


def shape_checks(spec: Spec, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The template's shape rules (``[[shape_checks]]`` in template.toml) the torch op checks when it
    is traced; a rule naming an input the spec no longer has is left out."""
    names = {t.name for t in spec.inputs}
    return [check for check in meta.get("shape_checks", []) if set(check["inputs"]) <= names]


def _self_check(spec: Spec, files: dict[str, str]) -> None:
    """A generated project must read back as the same spec and hold valid Python."""
    reread = specmod.from_dict(tomllib.loads(files[specmod.SPEC_FILE]), spec.root / specmod.SPEC_FILE)
    if reread != spec:
        raise AssertionError(f"template bug: xlacc.toml does not read back as the spec ({reread} != {spec})")
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")


# -- xlacc new ------------------------------------------------------------------------------------


def create(request: NewRequest) -> Report:
    spec, meta = spec_for(request)
    specmod.refuse_inside_a_record(spec.root, request.directory or spec.name)
    files = _render(spec, meta, _checked_wrapping(request, spec, meta))
    record = generated.record_text(spec, files)
    directory = spec.root
    shown = Path(request.directory or spec.name)
    with locks.project_lock(directory, "new"):  # two `new` into one folder: the second finds it full
        plan = generated.plan_new(directory, files, record, force=request.force)
        if not request.dry_run:
            generated.apply(directory, plan)
    verb = "would write" if request.dry_run else "wrote"
    report = Report(title=f"xlacc new {spec.name} (template {spec.template}, {spec.platform}, {spec.api}, {', '.join(spec.frameworks)})")
    for path, text in files.items():
        what = plan.actions[path]
        detail = f"{owner_of(spec, path)}: {_role(spec, path)}; {verb}{what.suffix(request.dry_run)}, {counted(len(text.splitlines()), 'line')}"
        report.add(Check(str(shown / path), True, detail))
    report.add(Check(str(shown / generated.RECORD_FILE), True, f"{XLACC}: {RECORD_ROLE}; {verb}, {len(record.splitlines())} lines"))
    report.data.update({"project": str(directory), "files": list(files), "dry_run": request.dry_run, "backups": plan.backups_json()})
    if plan.backups:
        report.notes.append(f"your edited files were kept in {shown / plan.backup_dir}")
    if not request.dry_run:
        report.notes.append(f"next: cd {shown} && xlacc build && xlacc run-smoke")
    return report


def _role(spec: Spec, path: str) -> str:
    return next((entry.role for entry, p in files_for(spec) if p == path), "")


# -- xlacc new --from: the user's kernel, and the code around it ------------------------------------


def _checked_wrapping(request: NewRequest, spec: Spec, meta: dict[str, Any]) -> dict[str, Any]:
    """The wrapped kernel's call (nothing without --from), once its file is known to stay as it is
    and its name not to be one the generated code uses."""
    if spec.origin is None:
        return {}
    _check_kernel_is_not_written(request, spec)
    wrapped = _wrapped_context(spec)
    _check_wrapped_name(request, spec, meta, wrapped)
    return wrapped


def _check_kernel_is_not_written(request: NewRequest, spec: Spec) -> None:
    """The file ``--from`` names stays as it is: it must not be one of the files ``new`` writes."""
    kernel = Path(os.path.normpath(spec.root / spec.origin.file))
    for _, path in files_for(spec):
        for target in (spec.root / path, spec.root / generated.BASE_DIR / path):
            if paths.same_file(target, kernel):
                raise UsageError(
                    f"--from {request.from_file}: xlacc new writes {path} in {request.directory or spec.name}, and would replace it: "
                    "move the kernel out of the project folder or choose another --dir; nothing was written"
                )


def _check_wrapped_name(request: NewRequest, spec: Spec, meta: dict[str, Any], wrapped: dict[str, Any]) -> None:
    """The wrapped function's name must not be one the generated code declares or sees where it
    calls the function (its launch function, handlers, symbols, the launch's locals): the call
    would reach xlacc's code, or the library would not build. Found by rendering that code with a
    stand-in name and reading the names it holds."""
    function = wrapped["wrapped"]
    if "::" in function.callee:  # called with its namespace: xlacc's names cannot hide it
        return
    other_name = f"xlacc_stand_in_for_{function.function}"
    stand_in = {**wrapped, "wrapped": dataclasses.replace(function, function=other_name, callee=other_name)}
    code = _render(spec, meta, stand_in, only={spec.kernel_file, spec.entry_file})
    if function.function in cxx_tokens.cxx_names_used(code[spec.kernel_file]) | cxx_tokens.cxx_names_declared(code[spec.entry_file]):
        raise UsageError(
            f"--from {request.from_file}: `{function.function}` is a name the code xlacc generates for op {spec.name!r} uses too: "
            "give the op another name, or wrap another function of yours with --kernel; nothing was written"
        )
