"""Reading ``xlacc.toml``: finding it, parsing the TOML, and turning each table into the model,
with an error that names the key for anything wrong."""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from xlacc.ground import paths
from xlacc.ground.errors import SpecError, UsageError
from xlacc.ground.wording import first_repeated
from xlacc.spec import sharding as sharding_rules
from xlacc.spec.abi import (
    APIS,
    ATTR_RANGES,
    ATTR_TYPES,
    BACKWARD_KINDS,
    DTYPES,
    FRAMEWORKS,
    GRAD_PREFIX,
    KERNEL_SUFFIXES,
    PLATFORMS,
)
from xlacc.spec.checks import (
    FLAG,
    IDENTIFIER,
    MAX_DIM,
    MAX_SPEC_BYTES,
    PATH_TEXT,
    SAVED_SHAPE,
    _python_name,
    check_identifier,
    check_member_name,
    check_op_name,
    check_target,
    finite_number,
    flag_problem,
    parse_archs,
)
from xlacc.spec.model import (
    Attr,
    Backward,
    Build,
    Generated,
    Origin,
    Sharding,
    Spec,
    Tensor,
)

SPEC_FILE = "xlacc.toml"
RECORD_DIR = ".xlacc"  # xlacc's own folder in a project (xlacc.commands.new.record)
RECORD_FILE = f"{RECORD_DIR}/record.toml"  # what xlacc wrote: its version, the template, digests
BASE_DIR = f"{RECORD_DIR}/base"  # the files as xlacc last wrote them, for three-way merges
LEGACY_RECORD = "generated"  # the table of xlacc.toml that held the record before RECORD_FILE

# Every key each table may hold; anything else is a mistake worth naming (a misspelt key would
# otherwise be ignored silently).
KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "": ("op", "inputs", "outputs", "attrs", "build", "from", "sharding", "backward", "generated", "bench"),
    "bench": ("peers",),  # read by `xlacc bench` (module:function peers to time the op against)
    "op": ("name", "target", "template", "platform", "api", "frameworks", "reference"),
    "inputs": ("name", "dtype", "shape"),
    "outputs": ("name", "dtype", "shape", "alias", "scratch"),
    "attrs": ("name", "type", "default"),
    "build": ("kernel", "sources", "include_dirs", "defines", "flags", "archs", "arch_specific", "ptx", "output"),
    "from": ("file", "kernel", "sizes"),
    "generated": ("xlacc", "template", "signature", "files"),
    "record": ("xlacc", "template", "signature", "files"),
    "sharding": ("rule", "whole"),
    "backward": ("kind", "grads", "saved"),
    "backward.saved": ("name", "dtype", "shape"),
}


def find_spec(path: Path) -> Path:
    """The ``xlacc.toml`` for a project directory or the file itself. Inside a project's own
    ``.xlacc/`` record, or below a project, the project is named rather than taken."""
    path = Path(path)
    candidate = path / SPEC_FILE if path.is_dir() else path
    absolute = candidate.absolute()
    refuse_inside_a_record(absolute.parent, path)
    if not candidate.exists() or candidate.is_dir():
        above = next((folder for folder in absolute.parent.parents if (folder / SPEC_FILE).is_file()), None)
        where = f"; the project above is {above}" if above is not None else " (make one with 'xlacc new NAME')"
        raise UsageError(f"no {SPEC_FILE} in {path}: not an xlacc project{where}")
    return candidate


def _takes(parameters: str, count: int) -> bool:
    """Whether a parameter list takes ``count`` arguments: as many, or more whose extras have defaults."""
    listed = [p for p in parameters.split(",") if p.strip()]
    return len(listed) == count or (len(listed) > count and all("=" in p for p in listed[count:]))


def refuse_inside_a_record(folder: Path, shown: Path | str) -> None:
    """A project's ``.xlacc/`` record is xlacc's: no command runs there, nor writes a project in it."""
    project = _project_whose_record_holds(Path(folder).absolute())
    if project is not None:
        raise UsageError(f"{shown} is inside {project}'s {RECORD_DIR}/ folder, xlacc's record of that project: run xlacc on {project}")


def _project_whose_record_holds(folder: Path) -> Path | None:
    """The project whose ``.xlacc/`` record ``folder`` is in (a ``.xlacc`` beside an xlacc.toml);
    None elsewhere, a folder merely named ``.xlacc`` included."""
    parts = folder.parts
    for index, part in enumerate(parts):
        if part == RECORD_DIR and (Path(*parts[:index]) / SPEC_FILE).is_file():
            return Path(*parts[:index])
    return None


def read_toml(spec_path: Path) -> dict[str, Any]:
    try:
        text = paths.read_user_file(spec_path, MAX_SPEC_BYTES).decode("utf-8-sig")  # an editor's byte-order mark is no error
    except FileNotFoundError:
        raise UsageError(f"{spec_path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise SpecError(spec_path, "toml", f"not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(spec_path, "toml", f"not valid TOML: {exc}") from None


def load(path: Path) -> Spec:
    """The project's spec, with xlacc's record of what it wrote: ``.xlacc/record.toml``, or the
    ``[generated]`` table of an xlacc.toml written before the record moved (``xlacc update`` moves it)."""
    spec_path = find_spec(path)
    spec = from_dict(read_toml(spec_path), spec_path)
    record_path = spec.root / RECORD_FILE
    if record_path.is_file() or spec.generated is None:
        spec = dataclasses.replace(spec, generated=read_record(record_path))
    return spec


def read_record(path: Path) -> Generated | None:
    """``.xlacc/record.toml``; None when the project has none."""
    if not path.is_file() and not path.is_symlink():
        return None
    raw = read_toml(path)
    reader = _Reader(path)
    reader.known_keys(raw, "record", "")
    return reader.record(raw, "")


def from_dict(raw: dict[str, Any], spec_path: Path) -> Spec:
    reader = _Reader(spec_path)
    reader.known_keys(raw, "")
    op = reader.table(raw, "op", required=True)
    name = reader.get(op, "op.name", check_op_name)
    inputs = tuple(reader.tensor(t, f"inputs[{i}]", is_output=False) for i, t in enumerate(reader.array(raw, "inputs")))
    outputs = tuple(reader.tensor(t, f"outputs[{i}]", is_output=True) for i, t in enumerate(reader.array(raw, "outputs")))
    attrs = tuple(reader.attr(a, f"attrs[{i}]") for i, a in enumerate(reader.array(raw, "attrs", required=False)))
    reader.check_distinct_names(inputs, outputs, attrs)  # before [backward] and the rest name them
    reader.table(raw, "bench")  # its keys; `xlacc bench` reads the peers it names
    spec = Spec(
        name=name,
        target=reader.get(op, "op.target", check_target, default=name),
        template=reader.string(op, "op.template", default="blank"),
        platform=reader.choice(op, "op.platform", PLATFORMS, default="cuda"),
        api=reader.choice(op, "op.api", APIS, default="ffi"),
        frameworks=reader.choices(op, "op.frameworks", FRAMEWORKS, default=["jax"]),
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        build=reader.build(reader.table(raw, "build")),
        reference=reader.path_string(op, "op.reference"),
        origin=reader.origin(reader.table(raw, "from")),
        sharding=reader.sharding(reader.table(raw, "sharding")),
        backward=reader.backward(reader.table(raw, "backward"), inputs) if "backward" in raw else None,
        generated=reader.generated(raw),
        root=spec_path.parent,
    )
    reader.cross_check(spec)
    return spec


class _Reader:
    """Reads one key at a time, checking its type, and raises a SpecError naming it."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(self.path, key, message)

    def known_keys(self, table: dict, kind: str, where: str | None = None) -> None:
        allowed = KNOWN_KEYS[kind]
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(allowed)}"
                place = where if where is not None else kind
                raise self.fail(f"{place}.{key}" if place else key, f"unknown key{hint}")

    def table(self, raw: dict, key: str, required: bool = False) -> dict:
        if key not in raw and not required:
            return {}
        value = raw.get(key)
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table: add a [{key}] section" if value is None else "must be a table")
        self.known_keys(value, key)
        return value

    def array(self, raw: dict, key: str, required: bool = True) -> list:
        value = raw.get(key, None if required else [])
        if not isinstance(value, list) or (required and not value):
            raise self.fail(key, f"at least one [[{key}]] entry is required" if required else f"must be [[{key}]] tables")
        return value

    def get(self, table: dict, key: str, check, default: Any = None) -> Any:
        short = key.rsplit(".", 1)[-1]
        if short not in table and default is None:
            raise self.fail(key, "missing")
        try:
            return check(table.get(short, default))
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None

    def string(self, table: dict, key: str, default: str) -> str:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if not isinstance(value, str):
            raise self.fail(key, f"{value!r} is not a string")
        return value

    def strings(self, table: dict, key: str) -> tuple[str, ...]:
        value = table.get(key.rsplit(".", 1)[-1], [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, f"{value!r} is not allowed; use a list of strings")
        return tuple(value)

    def path_string(self, table: dict, key: str, default: str = "") -> str:
        value = self.string(table, key, default)
        if value:
            self.check_path_text(value, key)
        return value

    def paths(self, table: dict, key: str) -> tuple[str, ...]:
        values = self.strings(table, key)
        for value in values:
            self.check_path_text(value, key)
        return values

    def check_path_text(self, value: str, key: str) -> None:
        if not PATH_TEXT.match(value):
            raise self.fail(key, f"{value!r}: a path without quotes, backslashes or control characters")

    def project_path(self, value: str, key: str) -> str:
        """A path inside the project, relative to it (what xlacc writes or generated code includes)."""
        self.check_path_text(value, key)
        parts = Path(value).parts
        if Path(value).is_absolute() or ".." in parts:
            raise self.fail(key, f"{value!r}: a path inside the project, relative to xlacc.toml")
        return value

    def choice(self, table: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if value not in allowed:
            raise self.fail(key, f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
        return value

    def choices(self, table: dict, key: str, allowed: tuple[str, ...], default: list[str]) -> tuple[str, ...]:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(key, f"must be a non-empty list drawn from: {', '.join(allowed)}")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise self.fail(key, f"{bad[0]!r} is not allowed; use any of: {', '.join(allowed)}")
        return self.once_each(value, key)

    def once_each(self, values: list[str] | tuple[str, ...], key: str) -> tuple[str, ...]:
        twice = first_repeated(values)
        if twice:
            raise self.fail(key, f"{twice!r} is listed twice")
        return tuple(values)

    def dtypes(self, value: Any, key: str) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or any(v not in DTYPES for v in items):
            raise self.fail(key, f"{value!r} is not allowed; use one of {', '.join(DTYPES)} (or a list of them)")
        return self.once_each(items, key)

    def tensor(self, raw: Any, key: str, is_output: bool) -> Tensor:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name, dtype and shape")
        self.known_keys(raw, "outputs" if is_output else "inputs", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "name"))
        dtypes = self.dtypes(raw.get("dtype"), f"{key}.dtype")
        if is_output and ("alias" in raw or "scratch" in raw):
            return self.special_result(raw, key, name, dtypes)
        shape = raw.get("shape")
        if isinstance(shape, str):
            if not is_output:
                raise self.fail(f"{key}.shape", "an input's shape is a list of dims (ints or symbols), or omitted")
            return Tensor(name, dtypes, None, like=shape)
        if shape is not None:
            if not isinstance(shape, list) or not all(
                (isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM) or (isinstance(d, str) and IDENTIFIER.match(d))
                for d in shape
            ):
                raise self.fail(f"{key}.shape", f"use a list of ints from 0 to {MAX_DIM} or symbol names, or an input's name")
            shape = tuple(shape)
        elif is_output:
            raise self.fail(f"{key}.shape", "missing: give an input's name (same shape) or a list of dims")
        return Tensor(name, dtypes, shape)

    def special_result(self, raw: dict, key: str, name: str, dtypes: tuple[str, ...]) -> Tensor:
        """A result written in place into an input (``alias = "INPUT"``, its shape that input's), or a
        scratch buffer (``scratch = true``) of a fixed shape that the bindings never return."""
        alias, scratch, shape = raw.get("alias"), self.boolean(raw, f"{key}.scratch", default=False), raw.get("shape")
        if alias is not None and scratch:
            raise self.fail(f"{key}.scratch", "a scratch result cannot also alias an input")
        if alias is not None:
            if not isinstance(alias, str) or not IDENTIFIER.match(alias):
                raise self.fail(f"{key}.alias", f"{alias!r} is not an input's name")
            if shape not in (None, alias):
                raise self.fail(f"{key}.shape", f"a result that aliases {alias!r} has its shape: omit shape or write shape = {alias!r}")
            return Tensor(name, dtypes, None, like=alias, alias=alias)
        if not scratch:
            return self.tensor({k: v for k, v in raw.items() if k != "scratch"}, key, is_output=True)
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM for d in shape):
            raise self.fail(f"{key}.shape", f"a scratch result needs a fixed shape: a list of ints from 1 to {MAX_DIM}")
        return Tensor(name, dtypes, tuple(shape), scratch=True)

    def attr(self, raw: Any, key: str) -> Attr:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name and type")
        self.known_keys(raw, "attrs", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "attribute name"))
        attr_type = raw.get("type")
        if attr_type not in ATTR_TYPES:
            raise self.fail(f"{key}.type", f"{attr_type!r} is not allowed; use one of: {', '.join(ATTR_TYPES)}")
        default = raw.get("default")
        if default is not None:
            try:
                default = finite_number(default, "default", integer=attr_type.startswith("i"))
            except UsageError as exc:
                raise self.fail(f"{key}.default", str(exc)) from None
            low, high = ATTR_RANGES.get(attr_type, (-math.inf, math.inf))
            if not low <= default <= high:
                raise self.fail(f"{key}.default", f"{default!r} does not fit in {attr_type} ({low} to {high})")
        return Attr(name, attr_type, default)

    def boolean(self, table: dict, key: str, default: bool) -> bool:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} is not allowed; use true or false")
        return value

    def build(self, table: dict) -> Build:
        flags = self.strings(table, "build.flags")
        problem = next(((f, flag_problem(f)) for f in flags if flag_problem(f)), None)
        if problem is not None:
            raise self.fail("build.flags", f"{problem[0]!r}: {problem[1]}")
        defines = self.strings(table, "build.defines")
        bad = next((d for d in defines if not FLAG.match(d)), None)
        if bad is not None:
            raise self.fail("build.defines", f"{bad!r}: NAME or NAME=VALUE, without spaces or control characters")
        kernel = self.string(table, "build.kernel", default="")
        return Build(
            kernel=self.project_path(kernel, "build.kernel") if kernel else "",
            sources=self.once_each(self.paths(table, "build.sources"), "build.sources"),
            include_dirs=self.paths(table, "build.include_dirs"),
            defines=defines,
            flags=flags,
            archs=self.get(table, "build.archs", parse_archs, default="auto"),
            arch_specific=self.boolean(table, "build.arch_specific", default=False),
            ptx=self.boolean(table, "build.ptx", default=True),
            output=self.path_string(table, "build.output"),
        )

    def origin(self, table: dict) -> Origin | None:
        if not table:
            return None
        sizes = table.get("sizes", {})
        if not isinstance(sizes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in sizes.items()):
            raise self.fail("from.sizes", "must be a table of parameter = \"INPUT.size\" | \"INPUT.shape[K]\" | \"N\"")
        return Origin(
            file=self.path_string(table, "from.file"),
            function=self.get(table, "from.kernel", lambda v: check_identifier(v, "kernel")),
            sizes=tuple(sorted(sizes.items())),
        )

    def sharding(self, table: dict) -> Sharding | None:
        if not table:
            return None
        rule = self.string(table, "sharding.rule", default="")
        try:
            text = sharding_rules.parse(rule).text  # normalised: names, "...", "(", ")", ",", "->" and single spaces
        except sharding_rules.RuleError as exc:
            raise self.fail("sharding.rule", str(exc)) from None
        return Sharding(text, self.strings(table, "sharding.whole"))

    def backward(self, table: dict, inputs: tuple[Tensor, ...]) -> Backward:
        kind = self.choice(table, "backward.kind", BACKWARD_KINDS, default="kernel")
        floating = [t.name for t in inputs if any(d.startswith(("f", "bf")) for d in t.dtypes)]
        grads = self.once_each(self.strings(table, "backward.grads"), "backward.grads") if "grads" in table else tuple(floating)
        bad = next((g for g in grads if g not in floating), None)
        if bad is not None:
            raise self.fail("backward.grads", f"{bad!r} is not a floating-point input; use some of: {', '.join(floating)}")
        saved = table.get("saved", [])
        if not isinstance(saved, list):
            raise self.fail("backward.saved", "must be [[backward.saved]] tables")
        if saved and kind != "kernel":
            raise self.fail("backward.saved", f"only a kernel backward reads saved tensors (kind = {kind!r})")
        return Backward(kind, grads, tuple(self.saved_tensor(t, f"backward.saved[{i}]") for i, t in enumerate(saved)))

    def saved_tensor(self, raw: Any, key: str) -> Tensor:
        """A tensor the forward writes for the backward: shaped like an input, or like its leading
        dims (``shape = "x[:-1]"``: one value per row)."""
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name, dtype and shape")
        self.known_keys(raw, "backward.saved", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "name"))
        dtypes = self.dtypes(raw.get("dtype"), f"{key}.dtype")
        match = SAVED_SHAPE.match(raw.get("shape", "")) if isinstance(raw.get("shape"), str) else None
        if not match:
            raise self.fail(f"{key}.shape", "use an input's name (same shape), or NAME[:-N] for its leading dims")
        return Tensor(name, dtypes, None, like=match["like"], like_stop=int(match["stop"]) if match["stop"] else None)

    def generated(self, raw: dict) -> Generated | None:
        """xlacc.toml's ``[generated]`` table: the record as xlacc wrote it before RECORD_FILE."""
        table = self.table(raw, LEGACY_RECORD)
        return dataclasses.replace(self.record(table, LEGACY_RECORD), legacy=True) if table else None

    def record(self, table: dict, where: str) -> Generated:
        """The record's keys, in ``table`` (``where``: its name, for messages)."""
        key = f"{where}." if where else ""
        files = table.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise self.fail(f"{key}files", "must be a table of file -> hash (xlacc writes it; restore it from version control)")
        for path in files:
            self.project_path(path, f"{key}files")
        return Generated(
            xlacc=self.string(table, f"{key}xlacc", default=""),
            template=self.string(table, f"{key}template", default=""),
            signature=self.string(table, f"{key}signature", default=""),
            files=dict(files),
        )

    def check_distinct_names(self, inputs: tuple[Tensor, ...], outputs: tuple[Tensor, ...], attrs: tuple[Attr, ...]) -> None:
        tables = [("inputs", t.name) for t in inputs] + [("outputs", t.name) for t in outputs] + [("attrs", a.name) for a in attrs]
        counts = Counter(name for _, name in tables)
        duplicate = next(((table, name) for table, name in reversed(tables) if counts[name] > 1), None)
        if duplicate:
            raise self.fail(duplicate[0], f"the name {duplicate[1]!r} is used twice; operands, results and attributes need distinct names")

    def cross_check(self, spec: Spec) -> None:
        names = [t.name for t in spec.inputs + spec.outputs] + [a.name for a in spec.attrs]
        input_names = [t.name for t in spec.inputs]
        for i, out in enumerate(spec.outputs):
            if out.like is not None and out.like not in input_names:
                where = "alias" if out.alias else "shape"
                raise self.fail(f"outputs[{i}].{where}", f"{out.like!r} is not an input; use one of: {', '.join(input_names)}")
        self.cross_check_results(spec)
        self.check_output_symbols(spec)
        generic = {t.dtypes for t in spec.inputs + spec.outputs if t.generic}
        if len(generic) > 1:
            raise self.fail("inputs", "all dtype lists in one op must be the same list (the op is generic over one type)")
        if generic and not any(t.generic for t in spec.inputs):
            raise self.fail("outputs", "a result with a dtype list needs an input with the same list to take its type from")
        self.check_reference(spec)
        self.check_kernel(spec)
        self.check_saved(spec, names)
        self.check_sharding(spec)  # before the backward: its target's rule is derived from this one
        self.check_backward(spec, names)

    def check_output_symbols(self, spec: Spec) -> None:
        """A symbol in a result's shape is sized by an input's dim of the same symbol."""
        known = {d for t in spec.inputs for d in (t.shape or ()) if isinstance(d, str)}
        for i, t in enumerate(spec.outputs):
            unknown = next((d for d in (t.shape or ()) if isinstance(d, str) and d not in known), None)
            if unknown is not None:
                raise self.fail(f"outputs[{i}].shape", f"{unknown!r} is no input's dim: name it in an input's shape, or give a number")

    def check_kernel(self, spec: Spec) -> None:
        if not spec.build.kernel:
            return
        suffixes = KERNEL_SUFFIXES[spec.platform]
        if not spec.build.kernel.endswith(suffixes):
            raise self.fail("build.kernel", f"{spec.build.kernel!r}: a {spec.platform} kernel is a {' or '.join(suffixes)} file")
        if spec.build.kernel == spec.entry_file:
            raise self.fail("build.kernel", f"{spec.build.kernel!r} is xlacc's file of entry points, which includes the kernel: name your kernel's file")

    def check_reference(self, spec: Spec) -> None:
        """FILE.py[:FUNCTION]; generated code imports a module of the package by its file's name."""
        if not spec.reference:
            return
        file, _, function = spec.reference.partition(":")
        if not file.endswith(".py") or (function and not _python_name(function)):
            raise self.fail("op.reference", f"{spec.reference!r}: use FILE.py:FUNCTION")
        path = Path(file)
        if path.parent == Path(spec.package) and not _python_name(path.stem):
            raise self.fail("op.reference", f"{spec.reference!r}: a module of the package {spec.package}/ is imported by name: its file name must be a Python identifier")

    def check_saved(self, spec: Spec, names: list[str]) -> None:
        for i, t in enumerate(spec.saved):
            if t.like not in [i.name for i in spec.inputs]:
                raise self.fail(f"backward.saved[{i}].shape", f"{t.like!r} is not an input")
            if t.name in names:
                raise self.fail(f"backward.saved[{i}].name", f"{t.name!r} is already an operand, result or attribute")

    def check_backward(self, spec: Spec, names: list[str]) -> None:
        if spec.backward and spec.backward.kind == "reference" and spec.reference_module is None:
            raise self.fail("backward.kind", f"\"reference\" differentiates the reference, which must be a module of the package {spec.package}/")
        if spec.backward_call:
            taken = set(names) | {t.name for t in spec.saved}
            clash = next((t.name for t in spec.backward_call.inputs + spec.backward_call.outputs if t.name.startswith(GRAD_PREFIX) and t.name in taken), None)
            if clash:
                raise self.fail("backward", f"the backward names a gradient {clash!r}, which is already an operand, result or attribute")

    def check_sharding(self, spec: Spec) -> None:
        if spec.sharding is None:
            return
        ranks = {t.name: (len(t.shape) if t.shape is not None else None) for t in spec.inputs + spec.results}
        for t in spec.outputs:
            if t.like:
                ranks[t.name] = ranks[t.like]
        try:
            # Scratch results are each device's own working memory: the rule covers what is returned.
            sharding_rules.check(spec.sharding.parsed, tuple(t.name for t in spec.inputs), tuple(t.name for t in spec.results), ranks, spec.sharding.whole)
            spec._saved_factors(spec.sharding.parsed)  # a saved tensor takes its input's leading factors
        except sharding_rules.RuleError as exc:
            raise self.fail("sharding.rule", str(exc)) from None

    def cross_check_results(self, spec: Spec) -> None:
        aliased: list[str] = []
        for i, out in enumerate(spec.outputs):
            if out.alias is None:
                continue
            if out.alias in aliased:
                raise self.fail(f"outputs[{i}].alias", f"{out.alias!r} is aliased by two results; each input can hold one")
            aliased.append(out.alias)
            if out.dtypes != spec.input(out.alias).dtypes:
                raise self.fail(f"outputs[{i}].dtype", f"a result written in place has its input's dtype: {list(spec.input(out.alias).dtypes)}")
        if not spec.results:
            raise self.fail("outputs", "every result is scratch: the op would return nothing and XLA would remove it")
