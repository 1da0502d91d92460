"""`xlacc new NAME --from kernel.cu`: wrap a kernel the user already has, left unchanged.

The kernel's source is read with the C++/CUDA parser doctor uses (``xlacc.readers.cxx``). One
function is wrapped: a ``__global__`` kernel, launched from the generated launch function, or a
host function (a launcher taking a ``cudaStream_t``, or a CPU function), called from it. Its
parameters become the op's signature. A file holding both a ``__global__`` kernel and a host function
that takes a ``cudaStream_t`` and launches every kernel of the file wraps that launcher: it knows the
grid, which xlacc would only guess.

- ``const T*`` an input, ``T*`` an output (each shaped like the first input unless
  ``--output NAME:like=INPUT``), T from the pointee type or, for ``template <typename T>``, the
  op's element type;
- an integer: what ``--size NAME=INPUT.size|INPUT.shape[K]|N`` says, an attribute when
  ``--attr NAME:TYPE=DEFAULT`` names it, else, when named like an element count (``n``, ``size``,
  ``numel``...), the first input's element count; any other integer is asked about;
- a floating-point scalar an attribute (``--attr NAME:TYPE=DEFAULT`` gives its default);
- a ``cudaStream_t`` the call's stream;
- a struct passed by value: each field by the same rules, filled in before the launch.

A function (or struct) inside a namespace is named with it (``my::inner::scale``): the launch
code is outside the user's namespaces.

A tensor whose dims ``--size`` reads (``INPUT.shape[K]``) must have them: the launch function
checks its rank before the call, and ``reference.example_inputs`` starts with inputs of that rank.

A host function taking ``torch::Tensor`` (a PyTorch extension's launcher) is read by
:mod:`.torch_launcher` and called over xlacc's PyTorch stand-ins (templates/_torch_compat). The
file's includes, found beside it and in ``--include`` folders (:mod:`.includes`), are read too:
for the kernels a launcher passes its pointers to, and for ``--kernel`` naming one of theirs.

What cannot be told from the source is asked for all at once, each question with the answer xlacc
guesses from shape comments and names (:mod:`.questions`); ``--accept-guesses`` takes them.
The spec records where the kernel came from (``[from]``), so ``xlacc update`` reads it again; it
refuses, naming what to change in xlacc.toml, when the kernel's parameters no longer match the op
there (:func:`check_spec`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

from xlacc.commands.new import includes, torch_launcher
from xlacc.commands.new.questions import (
    Question,
    QuestionsError,
    guess_size,
    signature_dims,
)
from xlacc.commands.new.wrapped import (  # noqa: F401 (THREADS, example_shape: the templates' and tests' names for them)
    C_DTYPES,
    ELEMENT_COUNT,
    FLAGS,
    FLOAT_TYPES,
    INTEGER_TYPES,
    MAX_KERNEL_BYTES,
    SIZE_EXPRESSION,
    SPEC,
    STREAM_TYPES,
    THREADS,
    WIDE_INTEGERS,
    Argument,
    Asking,
    Wrapped,
    example_shape,
    is_text,
    size_expression,
)
from xlacc.ground import paths
from xlacc.ground.errors import UsageError
from xlacc.readers import cxx


def read(
    path: Path,
    function: str | None,
    sizes: dict[str, str],
    attrs: set[str] = frozenset(),
    asking: Asking = FLAGS,
    *,
    include_dirs: tuple[Path, ...] = (),
    likes: dict[str, str] | None = None,
    questions_ok: bool = False,
) -> Wrapped:
    """Read ``path`` and describe how to wrap ``function`` (the only kernel when None).

    ``include_dirs``: where its includes are searched (besides its folder), for kernels and launched
    functions; ``likes``: outputs whose shape is given (``--output NAME:like=INPUT``). What xlacc
    guessed is in ``Wrapped.questions``; unless ``questions_ok`` any guess raises QuestionsError."""

    where = asking.source.format(path=path)
    try:
        text = paths.read_user_file(path, MAX_KERNEL_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except UsageError as exc:
        raise UsageError(asking.source.format(path=exc)) from None
    source = cxx.parse(path.name, text)
    included = [(found.path, found.text, cxx.parse(found.path.name, found.text)) for found in includes.closure(path, text, tuple(include_dirs))]
    chosen, text = _choose(source, text, included, path, function, asking)
    if torch_launcher.is_launcher(chosen):
        functions = {f.short_name: f for s in [source, *(i[2] for i in included)] for f in s.functions if any(p.is_pointer for p in f.params)}
        home = next((s for s in [source, *(i[2] for i in included)] if any(f is chosen for f in s.functions)), source)
        wrapped = torch_launcher.read_launcher(where, chosen, home, functions, sizes, set(attrs), dict(likes or {}))
        unused = sorted(set(sizes) - {a.name for a in wrapped.arguments if a.kind in ("size", "text")})
        if unused:
            raise UsageError(f"{asking.size.format(name=unused[0])}: {chosen.short_name} has no parameter of that name")
        if wrapped.questions and not questions_ok:
            raise QuestionsError(chosen.short_name, wrapped.questions, in_spec=asking is SPEC)
        return wrapped
    if any(not re.match(r"^(typename|class)\s+\w+$", p) for p in chosen.template_params) or len(chosen.template_params) > 1:
        raise UsageError(
            f"{where}: {chosen.short_name} has template parameters {', '.join(chosen.template_params)}; "
            "xlacc instantiates one type parameter with the op's element type: wrap an instantiation in a function of yours and name it with --kernel"
        )
    element_type = chosen.template_params[0].split()[-1] if chosen.template_params else None
    mapper = _Mapper(where, chosen.short_name, source, sizes, element_type, attrs, asking)
    mapper.guesses_from(chosen, text)
    arguments = [mapper.argument(p) for p in chosen.params]
    if mapper.questions and not questions_ok:
        raise QuestionsError(chosen.short_name, mapper.questions, in_spec=asking is SPEC)
    if not any(a.kind == "output" for a in (f for a in arguments for f in (a.fields or (a,)))):
        raise UsageError(f"{where}: {chosen.short_name} has no non-const pointer parameter, so no output: its results must go somewhere")
    unused = sorted(set(sizes) - mapper.used_sizes)
    if unused:
        raise UsageError(f"{asking.size.format(name=unused[0])}: {chosen.short_name} has no integer parameter of that name")
    sizes = {**sizes, **mapper.guessed_sizes}
    tensors = {a.name for a in (f for a in arguments for f in (a.fields or (a,))) if a.kind in ("input", "output")}
    for name, expression in sizes.items():
        referenced = SIZE_EXPRESSION.match(expression).group("tensor")
        if referenced is not None and referenced not in tensors:
            raise UsageError(
                f"{asking.size_value.format(name=name, expression=expression)}: {referenced!r} is not a tensor of {chosen.short_name} ({', '.join(sorted(tensors))})"
            )
    callee, arguments = _in_namespaces(text, chosen, arguments)
    return Wrapped(
        function=chosen.short_name,
        callee=callee,
        is_kernel=chosen.is_kernel,
        template=element_type is not None,
        returns_error=chosen.return_type.replace("const ", "").strip() in ("cudaError_t", "cudaError"),
        arguments=arguments,
        sizes=dict(sizes),
        questions=mapper.questions,
    )


def _in_namespaces(text: str, function, arguments: list[Argument]) -> tuple[str, list[Argument]]:
    """How code outside every namespace names ``function`` (``outer::inner::name``), and the
    arguments with each struct's type named so too. An anonymous namespace adds nothing: its names
    are seen from the one around it."""
    if function.from_macro is not None:  # its offsets are in the macro's expansion, not in ``text``
        return function.name, arguments
    root = cxx._parser().parse(text.encode("utf-8", errors="replace")).root_node
    start = function.body_range[0]
    callee = _namespace_of(root.descendant_for_byte_range(start, start)) + function.name
    scoped = [
        dataclasses.replace(a, c_type=_namespace_of(_struct_node(root, a.c_type)) + a.c_type) if a.kind == "struct" and "::" not in a.c_type else a
        for a in arguments
    ]
    return callee, scoped


def _namespace_of(node) -> str:
    """``outer::inner::`` for a syntax node inside those namespaces ("" for None or outside any)."""
    scopes = []
    while node is not None:
        name = node.child_by_field_name("name") if node.type == "namespace_definition" else None
        if name is not None:
            scopes.append(name.text.decode("utf-8", "replace") + "::")
        node = node.parent
    return "".join(reversed(scopes))


def _struct_node(root, name: str):
    """The definition of struct (or class) ``name``: the first with a body."""
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type in ("struct_specifier", "class_specifier") and node.child_by_field_name("body") is not None:
            found = node.child_by_field_name("name")
            if found is not None and found.text.decode("utf-8", "replace") == name:
                return node
        pending.extend(reversed([child for child in node.children if child.type in cxx.CONTAINERS]))
    return None


def _choose(source, text: str, included: list, path: Path, function: str | None, asking: Asking = FLAGS):
    """The function to wrap and the text it is defined in: ``function`` (in the file or a file it
    includes), else the file's one PyTorch launcher, its launcher of every kernel, its one kernel or
    its one function taking pointers."""
    kernels = source.kernels()
    torch_ok = [f for f in source.host_functions() if torch_launcher.is_launcher(f) and _torch_refusal(f) is None]
    launchers = [f for f in source.host_functions() if _takes_stream(f) and _launched_by(f, kernels) and _passable(f, source)]
    candidates = torch_ok or (launchers + kernels if kernels else [f for f in source.host_functions() if any(p.is_pointer for p in f.params)])
    if function is not None:
        for home_text, home in [(text, source), *((t, s) for _, t, s in included)]:
            found = home.function(function)
            if found is not None:
                refusal = _torch_refusal(found) if torch_launcher.is_launcher(found) else None
                if refusal:
                    raise UsageError(f"{asking.kernel.format(name=function)}: {found.short_name} is {refusal}")
                return found, home_text
        known = ", ".join([f.short_name for f in candidates] + [f"{k.short_name} ({p.name})" for p, _, s in included for k in s.kernels()]) or "none"
        raise UsageError(f"{asking.kernel.format(name=function)}: no function of that name in {path} or the files it includes (functions it could wrap: {known})")
    if torch_ok:
        if len(torch_ok) == 1:
            return torch_ok[0], text
        names = ", ".join(f.short_name for f in torch_ok)
        raise UsageError(f"{asking.source.format(path=path)}: it defines {len(torch_ok)} PyTorch launchers ({names}); pick one with --kernel NAME")
    if len(launchers) == 1 and len(_launched_by(launchers[0], kernels)) == len(kernels):
        return launchers[0], text  # the user's own launch of every kernel: its grid, not xlacc's guess
    if len(candidates) == 1:
        return candidates[0], text
    if not candidates:
        raise UsageError(f"{asking.source.format(path=path)}: nothing to wrap: no __global__ kernel, no PyTorch launcher and no function taking pointers; {_what_it_saw(source, included)}")
    names = ", ".join(f.short_name for f in candidates)
    raise UsageError(f"{asking.source.format(path=path)}: it defines {len(candidates)} functions it could wrap ({names}); pick one with --kernel NAME")


def _torch_refusal(function) -> str | None:
    return torch_launcher.why_not_passable(function, INTEGER_TYPES, FLOAT_TYPES)


def _what_it_saw(source, included: list) -> str:
    """What the file and its includes hold, and why none of it wraps: the message's second half."""
    seen = []
    for f in source.host_functions():
        why = _torch_refusal(f) if torch_launcher.is_launcher(f) else "takes no pointer and no tensor"
        seen.append(f"{f.short_name} (line {f.line}): {why}")
    for header, _, parsed in included:
        seen += [f"kernel {k.short_name} in {header.name} (line {k.line}): --kernel {k.short_name} wraps it" for k in parsed.kernels()]
    if not seen:
        return "it saw no function at all"
    return "it saw: " + "; ".join(seen)


def _takes_stream(function) -> bool:
    return any(p.base_type in STREAM_TYPES for p in function.params)


def _passable(function, source) -> bool:
    """Every parameter is of a type xlacc passes: a flat buffer of a known element type, a stream, a
    number, a struct of the file (not an XLA handler's ``void** buffers`` or ``ffi::Buffer``)."""
    element = function.template_params[0].split()[-1] if function.template_params else None
    scalars = INTEGER_TYPES | STREAM_TYPES | set(FLOAT_TYPES) | {element}
    return all(
        (p.pointer_depth == 1 and (p.base_type in C_DTYPES or p.base_type == element))
        if p.is_pointer
        else (p.base_type in scalars or source.struct(p.base_type) is not None)
        for p in function.params
    )


def _launched_by(host, kernels) -> list:
    """The kernels ``host`` launches: with ``<<<...>>>``, or by name in a call (``cudaLaunchKernel(k, ...)``)."""
    launched = {launch.short_kernel for launch in host.launches}
    named = {word for call in host.calls for arg in call.args for word in re.findall(r"\w+", arg)}
    return [k for k in kernels if k.short_name in launched or k.short_name in named]


class _Mapper:
    """Turns a parameter (or a struct field) into an argument of the call."""

    def __init__(self, where: str, function: str, source, sizes: dict[str, str], element_type: str | None, attrs: set[str], asking: Asking):
        self.where, self.function, self.source = where, function, source
        self.sizes, self.element_type, self.attrs, self.asking = sizes, element_type, attrs, asking
        self.used_sizes: set[str] = set()
        self.first_input: str | None = None
        self.questions: list = []  # xlacc.commands.new.questions.Question, each with the guess taken
        self.guessed_sizes: dict[str, str] = {}
        self.pointers: list[str] = []  # the tensors, inputs first, for the guesses
        self.dims: dict[str, list[str]] = {}

    def guesses_from(self, function, text: str) -> None:
        """What the guesses read: the pointer parameters and the shape comments on them."""
        params = list(function.params)
        self.dims = signature_dims(text, function.line, function.body_lines[0], {p.name for p in params})
        for struct in filter(None, (self.source.struct(p.base_type) for p in function.params if not p.is_pointer)):
            params += struct.fields  # a struct of parameters: its fields, and the shape comments on them
            last = struct.line + len(struct.fields) * 4 + 2
            self.dims.update(signature_dims(text, struct.line, last, {f.name for f in struct.fields}))
        pointers = [p for p in params if p.is_pointer and p.name]
        self.pointers = [p.name for p in pointers if p.const_pointee] + [p.name for p in pointers if not p.const_pointee]

    def fail(self, name: str, message: str) -> UsageError:
        return UsageError(f"{self.where}: {self.function}'s parameter `{name}` {message}")

    def argument(self, param, owner: str = "") -> Argument:
        name = param.name or "unnamed"
        if not param.name:
            raise self.fail(name, "has no name; name it in the kernel's declaration")
        base = param.base_type
        if param.is_pointer:
            return self.tensor(param, name, base)
        if base in STREAM_TYPES:
            return Argument(name, "stream", base, "stream")
        struct = self.source.struct(base)
        if struct is not None and not owner:
            fields = tuple(self.argument(f, owner=name) for f in struct.fields)
            return Argument(name, "struct", base, name, fields=fields)
        if base in INTEGER_TYPES:
            return self.integer(name, base)
        if base == self.element_type:  # a scalar of the op's element type: an f32 attribute, converted
            return Argument(name, "attr", base, f"xlacc::from_acc<T>(static_cast<xlacc::acc_t<T>>({name}))", "f32")
        if base in FLOAT_TYPES:
            return Argument(name, "attr", base, f"static_cast<{base}>({name})", FLOAT_TYPES[base])
        raise self.fail(name, f"has type `{param.type}`, which xlacc cannot pass: wrap the kernel in a function of yours that takes tensors and numbers")

    def tensor(self, param, name: str, base: str) -> Argument:
        if param.pointer_depth != 1:
            raise self.fail(name, f"is `{param.type}`: only flat buffers (one level of pointer) map to tensors")
        if base == self.element_type:
            dtype, c_type = "T", "T"
        elif base in C_DTYPES:
            dtype, c_type = C_DTYPES[base], base
        else:
            raise self.fail(name, f"points to `{base}`; xlacc knows buffers of {', '.join(sorted(C_DTYPES))} or the template's type")
        kind = "input" if param.const_pointee else "output"
        if kind == "input" and self.first_input is None:
            self.first_input = name
        cast = "const " if kind == "input" else ""
        element = "T" if dtype == "T" else base
        return Argument(name, kind, c_type, f"{name}.data<{cast}{element}>()" if cast else f"{name}.data<{element}>()", dtype)

    def integer(self, name: str, base: str) -> Argument:
        if name in self.sizes:
            self.used_sizes.add(name)
            if is_text(self.sizes[name]):
                raise self.fail(name, f"is an integer, and {self.asking.size_value.format(name=name, expression=self.sizes[name])} is a text: use INPUT.size, INPUT.shape[K] or a number")
            return self.size(name, base, size_expression(self.sizes[name], name, self.asking))
        if name in self.attrs:
            return Argument(name, "attr", base, f"static_cast<{base}>({name})", "i64" if base in WIDE_INTEGERS else "i32")
        if ELEMENT_COUNT.match(name) and self.first_input is not None:
            return self.size(name, base, f"{self.first_input}.numel()")
        return self.guess(name, base)

    def guess(self, name: str, base: str) -> Argument:
        """An integer nothing placed: asked about, with the size its name suggests, else an attribute."""
        found = guess_size(name, self.pointers, self.dims)
        if found is not None:
            expression, why = found
            self.questions.append(Question(name, "an integer", self.asking.size_value.format(name=name, expression=expression), why))
            self.guessed_sizes[name] = expression
            return self.size(name, base, size_expression(expression, name, self.asking))
        dtype = "i64" if base in WIDE_INTEGERS else "i32"
        flag = f"--attr {name}:{dtype}" if self.asking is FLAGS else self.asking.place_integer.format(name=name, dtype=dtype)
        self.questions.append(Question(name, "an integer", flag, "nothing says which size it is: an attribute the caller passes"))
        return Argument(name, "attr", base, f"static_cast<{base}>({name})", dtype)

    def size(self, name: str, base: str, value: str) -> Argument:
        return Argument(name, "size", base, f"static_cast<{base}>({value})", value=value)


def parse_sizes(values: list[str]) -> dict[str, str]:
    sizes = {}
    for value in values:
        name, eq, expression = value.partition("=")
        if not eq or not re.match(r"^[A-Za-z_]\w*$", name.strip()):
            raise UsageError(f"--size {value!r}: use NAME=INPUT.size, NAME=INPUT.shape[K] or NAME=N")
        size_expression(expression, name.strip())  # validates
        sizes[name.strip()] = expression.strip()
    return sizes


def check_spec(spec) -> None:
    """`xlacc update`: the wrapped function's parameters must still be the op's tensors and attributes.

    xlacc.toml is the user's, and update rewrites none of it (but to move an earlier layout's record out), so a parameter the
    kernel gained or lost is a one-line error saying what to change there, before anything is
    written (regenerating would call the kernel with a tensor no entry point receives)."""
    origin = spec.origin
    path = Path(os.path.normpath(spec.root / origin.file))
    wrapped = read(path, origin.function, dict(origin.sizes), {a.name for a in spec.attrs}, SPEC, **spec_context(spec))
    changes = _tensor_changes(spec, wrapped, "input") + _tensor_changes(spec, wrapped, "output") + _attr_changes(spec, wrapped)
    if changes:
        raise UsageError(f"{origin.function} in {origin.file} no longer matches xlacc.toml: {'; '.join(changes)}; then run `xlacc update` again")


def spec_context(spec) -> dict:
    """What ``read`` takes from a project's xlacc.toml besides [from]: its include folders and the
    shapes of its outputs (so a torch launcher's outputs are not asked about again)."""
    return {
        "include_dirs": tuple(Path(os.path.normpath(spec.root / d)) for d in spec.build.include_dirs),
        "likes": {t.name: t.like for t in spec.outputs if t.like and not t.alias},
    }


def _tensor_changes(spec, wrapped: Wrapped, kind: str) -> list[str]:
    table = f"[[{kind}s]]"
    declared = {t.name: t for t in (spec.inputs if kind == "input" else spec.outputs)}
    taken = {a.name: a for a in wrapped.tensors(kind)}
    changes = []
    for name, argument in taken.items():
        dtype = list(spec.op_dtypes) if argument.dtype == "T" else [argument.dtype]
        if name not in declared:
            keys = {"name": name, "dtype": dtype[0] if len(dtype) == 1 else dtype} | ({"shape": spec.inputs[0].name} if kind == "output" else {})
            changes.append(f"it takes an {kind} `{name}`: add a {table} table with {_keys(keys)}")
        elif argument.dtype != "T" and list(declared[name].dtypes) != dtype:
            changes.append(f"its {kind} `{name}` holds {argument.dtype} now: set dtype = \"{argument.dtype}\" in its {table} table")
    changes += [f"it takes no {kind} `{name}` any more: remove its {table} table" for name in declared if name not in taken]
    return changes


def _attr_changes(spec, wrapped: Wrapped) -> list[str]:
    declared = {a.name for a in spec.attrs}
    taken = {a.name: a.dtype for a in wrapped.attrs()}
    changes = [f"it takes a scalar `{name}`: add an [[attrs]] table with {_keys({'name': name, 'type': dtype})}" for name, dtype in taken.items() if name not in declared]
    return changes + [f"it takes no scalar `{name}` any more: remove its [[attrs]] table" for name in sorted(declared - set(taken))]


def _keys(table: dict) -> str:
    """``name = "x", dtype = "f32" and shape = "y"``: a table's keys in a sentence (JSON strings and lists are TOML's)."""
    pairs = [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return ", ".join(pairs[:-1]) + " and " + pairs[-1]
