"""A PyTorch extension's host launcher (``void f(torch::Tensor& out, const torch::Tensor& x,
int64_t n, double eps)``) as the op's signature, for `xlacc new --from`.

The launcher is compiled unchanged over xlacc's compatibility headers (templates/_torch_compat):
each tensor parameter is a view of an XLA buffer, each scalar an attribute or a size.

- A tensor is an output when named like one (``out``, ``output``, ``*_out``...) or ``--output``
  names it; a non-const tensor that the launcher passes to a kernel's (or a function's) non-const
  pointer is written in place (a cache): an input and a result that aliases it; every other tensor
  is an input. Its dtype is what ``data_ptr<T>()`` or a cast of ``data_ptr()`` says, else the op's.
- ``std::optional<torch::Tensor>`` is passed empty; ``const std::string&`` a fixed text
  (``--size NAME='TEXT'``).
- An integer is a size where a shape comment or its name says which dim it is (asked about, with
  the guess), else an attribute; a double or float an attribute; a bool an i32 attribute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.commands.new import questions as q
from xlacc.commands.new import wrapped as wrap
from xlacc.ground.errors import UsageError

TENSOR = re.compile(r"^(?:(?:torch|at)::)?Tensor$")
OPTIONAL_TENSOR = re.compile(r"^(?:std|c10|at|torch)::optional<\s*(?:(?:torch|at)::)?Tensor\s*>$")
TEXT_TYPES = frozenset({"std::string", "std::string_view", "c10::string_view"})
OUTPUT_NAME = re.compile(r"^(out|output|outputs|result|res|dst|dest|out_\w+|\w+_out|output_\w+|\w+_output)$")
DATA_CALL = r"\s*\.\s*(?:data_ptr|const_data_ptr|mutable_data_ptr|data)\b"
TYPED_DATA = r"\b{name}" + DATA_CALL + r"\s*<\s*(?:const\s+)?([\w:]+)\s*>"
CAST_DATA = r"(?:reinterpret_cast|static_cast)\s*<\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?\*\s*>\s*\(\s*{name}" + DATA_CALL
# C++ types of a data pointer, and their dtype; anything else (T, scalar_t, a cache type) is the op's.
DATA_DTYPES = {
    "float": "f32", "double": "f64", "int": "i32", "int32_t": "i32", "std::int32_t": "i32", "int64_t": "i64",
    "std::int64_t": "i64", "long": "i64", "at::Half": "f16", "c10::Half": "f16", "__half": "f16", "half": "f16",
    "at::BFloat16": "bf16", "c10::BFloat16": "bf16", "__nv_bfloat16": "bf16",
}  # fmt: skip
LAUNCH = re.compile(r"([A-Za-z_][\w:]*)\s*(?:<(?:[^<>;{}]|<[^<>;{}]*>)*>)?\s*<<<[^;]*?>>>\s*\(")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
CALL = re.compile(r"\b([A-Za-z_][\w:]*)\s*(?:<(?:[^<>;{}()]|<[^<>;{}()]*>)*>)?\s*\(")

# What the compatibility headers do not give, and what to do instead.
UNSUPPORTED = (
    (re.compile(r"\b(?:torch|at)::(?:empty|zeros|ones|full|empty_like|zeros_like|ones_like|full_like|empty_strided|arange|from_blob)\b"),
     "allocates a tensor, which a custom call cannot: make it an output of the launcher (a scratch result, "
     "`[[outputs]] scratch = true` in xlacc.toml) and pass it in"),
    (re.compile(r"\.\s*(?:new_empty|new_zeros|new_ones|new_full|clone)\s*\("),
     "allocates a tensor, which a custom call cannot: make it an output of the launcher (a scratch result) and pass it in"),
    (re.compile(r"\.\s*item\s*(?:<[^>]*>)?\s*\("),
     "reads a device value on the host (a sync XLA cannot capture): pass the value as a scalar parameter (an attribute)"),
    (re.compile(r"\.\s*(?:to|cpu|cuda|type|toType|double|float|half|bfloat16|copy_)\s*\("),
     "converts or copies a tensor: convert it in JAX or torch before the call and give the launcher the tensor it needs"),
    (re.compile(r"\.\s*(?:slice|index_select|permute|transpose|unsqueeze|squeeze|expand|t)\s*\("),
     "makes a strided view of a tensor, which xlacc's dense views have not (view, reshape, flatten and select or narrow of "
     "the first dim they have): pass the operand in the layout the kernel needs"),
)  # fmt: skip


@dataclass(frozen=True)
class Refusal:
    function: str
    line: int
    text: str
    advice: str


def is_tensor(param) -> bool:
    return not param.is_pointer and TENSOR.match(param.base_type) is not None


def is_launcher(function) -> bool:
    """A host function taking at least one torch tensor."""
    return not function.is_kernel and any(is_tensor(p) for p in function.params)


def why_not_passable(function, integer_types, float_types) -> str | None:
    """Why xlacc cannot call ``function`` with what XLA gives (None: it can)."""
    if any(not re.match(r"^(typename|class)\s+\w+$", p) for p in function.template_params):
        return f"a template over {', '.join(function.template_params)}, which xlacc cannot instantiate"
    for p in function.params:
        if p.is_pointer:
            return f"takes a pointer `{p.text}` as well as tensors"
        base = p.base_type
        if is_tensor(p) or OPTIONAL_TENSOR.match(base) or base in TEXT_TYPES or base in integer_types or base in float_types or base == "bool":
            if p.reference and not p.const_pointee and not is_tensor(p) and not OPTIONAL_TENSOR.match(base):
                return f"takes `{p.text}` by non-const reference (a result out of a scalar)"
            continue
        return f"takes `{p.text}`, which xlacc cannot pass"
    return None


def refusals(chosen, source) -> list[Refusal]:
    """The calls the compatibility headers do not give, in the launcher and in every host function of
    its file it calls, directly or through the file's macros (its `_launcher<...>` helper)."""
    found = []
    for function in reached_functions(chosen, source):
        body_start = function.body_lines[0]
        for index, line in enumerate(function.body.splitlines()):
            advice = next((advice for pattern, advice in UNSUPPORTED if pattern.search(line)), None)
            if advice is not None:
                found.append(Refusal(function.short_name, body_start + index, line.strip(), advice))
    return found


def reached_functions(chosen, source) -> list:
    """``chosen`` and the host functions of ``source`` whose names its body or the macros it uses
    name, and theirs in turn: each word is looked at once, so the walk is linear in the text."""
    by_name = {f.short_name: f for f in source.host_functions()}
    reached, taken, seen, pending = [chosen], {id(chosen)}, set(), [chosen.body]
    while pending:
        words = set(IDENTIFIER.findall(pending.pop())) - seen
        seen |= words
        for word in sorted(words):
            if word in source.macros:
                pending.append(source.macros[word].body)
            function = by_name.get(word)
            if function is not None and id(function) not in taken:
                taken.add(id(function))
                reached.append(function)
                pending.append(function.body)
    return reached


def logical_text(text: str) -> str:
    """``text`` without comments and with macro continuation lines joined: what the scans below read."""
    text = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"\\\r?\n", " ", text)


def tensor_dtype(name: str, code: str) -> str:
    """The dtype a tensor's data pointer is read as (``data_ptr<int>()``, ``reinterpret_cast<const
    float*>(x.data_ptr())``); "T" (the op's dtype) when the launcher reads it as a type parameter."""
    escaped = re.escape(name)
    types = set(re.findall(TYPED_DATA.format(name=escaped), code)) | set(re.findall(CAST_DATA.format(name=escaped), code))
    dtypes = {DATA_DTYPES.get(t, "T") for t in types}
    return dtypes.pop() if len(dtypes) == 1 else "T"


def written_tensors(tensors: list[str], code: str, functions: dict[str, object]) -> set[str]:
    """The tensors whose data reach a non-const pointer parameter of a kernel launched (``<<<``) or
    a function called in ``code``; ``functions``: short name -> the parsed kernel or function."""
    locals_of = _pointer_locals(tensors, code)
    written: set[str] = set()
    for match in list(LAUNCH.finditer(code)) + list(CALL.finditer(code)):
        callee = functions.get(match.group(1).rsplit("::", 1)[-1])
        if callee is None:
            continue
        args = _arguments(code, match.end())
        for param, arg in zip(callee.params, args):
            if not (param.is_pointer and not param.const_pointee):
                continue
            for word in re.findall(r"[A-Za-z_]\w*", arg):
                if word in tensors and re.search(rf"\b{word}{DATA_CALL}", arg):
                    written.add(word)
                written |= locals_of.get(word, set())
    return written


def _pointer_locals(tensors: list[str], code: str) -> dict[str, set[str]]:
    """Local variable -> the tensors whose data its initialiser takes (``T* out_ptr = out.data_ptr<T>()``)."""
    found: dict[str, set[str]] = {}
    for match in re.finditer(r"\b([A-Za-z_]\w*)\s*=\s*([^;=][^;]*);", code):
        names = {t for t in tensors if re.search(rf"\b{re.escape(t)}(?:\.value\(\))?{DATA_CALL}", match.group(2))}
        if names:
            found.setdefault(match.group(1), set()).update(names)
    return found


def _arguments(code: str, start: int) -> list[str]:
    """The comma-separated arguments of the call whose '(' ends just before ``start``."""
    depth, args, current = 0, [], []
    for index in range(start, min(len(code), start + 20_000)):
        char = code[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                args.append("".join(current).strip())
                return args
            depth -= 1
        elif char == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    return args


def read_launcher(where: str, chosen, source, functions: dict, sizes: dict[str, str], attrs: set[str], likes: dict[str, str]):
    """The Wrapped call of torch launcher ``chosen`` (defined in ``source``), its questions included."""
    text = source.text
    refused = refusals(chosen, source)
    if refused:
        shown = "\n".join(
            f"  line {r.line}{'' if r.function == chosen.short_name else ' (in ' + r.function + ')'}: `{r.text}`: {r.advice}" for r in refused
        )
        raise UsageError(f"{where}: {chosen.short_name} uses what xlacc's PyTorch compatibility headers do not give:\n{shown}")
    names = [p.name for p in chosen.params]
    clash = next((n for n in names if n.endswith("_arg") and n[: -len("_arg")] in names), None)
    if clash is not None:  # the launch code names its view of parameter X `X_arg`
        raise UsageError(f"{where}: {chosen.short_name} takes both `{clash[:-4]}` and `{clash}`, which xlacc's launch code cannot tell apart: rename one")
    code = logical_text(text)
    tensors = [p.name for p in chosen.params if is_tensor(p)]
    written = written_tensors(tensors, code, functions)
    dims = q.signature_dims(text, chosen.line, chosen.body_lines[0], set(names))
    mapper = _TorchMapper(where, chosen.short_name, code, sizes, attrs, likes, written, dims)
    arguments = [mapper.argument(p) for p in chosen.params]
    mapper.place_outputs(arguments)
    if not any(a.kind in ("output", "inplace") for a in arguments):
        raise UsageError(
            f"{where}: {chosen.short_name} writes no tensor xlacc can see: name its output `out` (or pass --output NAME:like=INPUT)"
        )
    return wrap.Wrapped(
        function=chosen.short_name, callee=chosen.name, is_kernel=False, template=bool(chosen.template_params), returns_error=False,
        arguments=arguments, sizes=mapper.sizes, torch=True, questions=mapper.questions, likes=mapper.likes, attr_defaults={},
    )  # fmt: skip


class _TorchMapper:
    def __init__(self, where, function, code, sizes, attrs, likes, written, dims):
        self.where, self.function, self.code = where, function, code
        self.sizes, self.attrs, self.likes = dict(sizes), attrs, dict(likes)
        self.written, self.dims = written, dims
        self.questions: list = []
        self.used_sizes: set[str] = set()
        self.tensor_order: list[str] = []

    def fail(self, name: str, message: str):
        return UsageError(f"{self.where}: {self.function}'s parameter `{name}` {message}")

    def argument(self, param):
        name, base = param.name, param.base_type
        if not name:
            raise self.fail("unnamed", "has no name; name it in the launcher's declaration")
        if is_tensor(param):
            return self.tensor(param)
        if OPTIONAL_TENSOR.match(base):
            return wrap.Argument(name, "none", base, f"{name}_arg", setup=f"std::optional<torch::Tensor> {name}_arg;  // not given: empty")
        if base in TEXT_TYPES:
            return self.text(name)
        if base == "bool":
            if name in self.sizes:
                return self.sized(name, "int64_t")
            return wrap.Argument(name, "attr", "int32_t", f"({name} != 0)", "i32")
        if base in wrap.FLOAT_TYPES:
            return wrap.Argument(name, "attr", base, f"static_cast<{base}>({name})", wrap.FLOAT_TYPES[base])
        return self.integer(name, base)

    def tensor(self, param):
        name = param.name
        dtype = tensor_dtype(name, self.code)
        c_type = "T" if dtype == "T" else next(t for t, d in wrap.C_DTYPES.items() if d == dtype)
        if OUTPUT_NAME.match(name) or name in self.likes:
            kind, setup = "output", f"torch::Tensor {name}_arg = xlacc::torch_compat::view({name});"
        elif name in self.written and not param.const_pointee:
            kind, setup = "inplace", f"torch::Tensor {name}_arg = xlacc::torch_compat::in_place(stream, {name}, {name}_out);"
        else:
            kind, setup = "input", f"torch::Tensor {name}_arg = xlacc::torch_compat::view({name});"
            self.tensor_order.append(name)
        return wrap.Argument(name, kind, c_type, f"{name}_arg", dtype, setup=setup)

    def text(self, name: str):
        value = self.sizes.get(name)
        if value is None:
            guess = "auto" if "dtype" in name else "''"
            self.questions.append(q.Question(name, "a text", f"--size {name}={guess}", "a text parameter is fixed when the op is built"))
            value = self.sizes[name] = guess
        if not wrap.is_text(value):
            raise self.fail(name, f"is a text, and --size {name}={value} is a size: give the text itself, such as --size {name}=auto")
        self.used_sizes.add(name)
        literal = wrap.size_expression(value, name)
        return wrap.Argument(name, "text", "std::string", f"{name}_arg", setup=f"std::string {name}_arg = {literal};")

    def integer(self, name: str, base: str):
        if name in self.sizes or name in self.attrs:
            return self.sized(name, base) if name in self.sizes else wrap.Argument(name, "attr", base, f"static_cast<{base}>({name})", _int_dtype(base))
        if wrap.ELEMENT_COUNT.match(name) and self.tensor_order:
            return wrap.Argument(name, "size", base, f"static_cast<{base}>({self.tensor_order[0]}.numel())", value=f"{self.tensor_order[0]}.numel()")
        guess = q.guess_size(name, self._tensors_for_guess(), self.dims)
        if guess is None:  # a scalar the caller passes, as in torch
            return wrap.Argument(name, "attr", base, f"static_cast<{base}>({name})", _int_dtype(base))
        expression, why = guess
        self.questions.append(q.Question(name, "an integer", f"--size {name}={expression}", why))
        self.sizes[name] = expression
        return self.sized(name, base)

    def sized(self, name: str, base: str):
        if wrap.is_text(self.sizes[name]):
            raise self.fail(name, f"is a number, and --size {name}={self.sizes[name]} is a text: use INPUT.size, INPUT.shape[K] or a number")
        self.used_sizes.add(name)
        value = wrap.size_expression(self.sizes[name], name)
        return wrap.Argument(name, "size", base, f"static_cast<{base}>({value})", value=value)

    def _tensors_for_guess(self) -> list[str]:
        """Every tensor parameter, inputs first (a size names an input's dim more often than an output's)."""
        return self.tensor_order + [t for t in self.dims if t not in self.tensor_order]

    def place_outputs(self, arguments) -> None:
        """Each output's shape: --output's, else an input whose shape comment is the same, else asked."""
        inputs = [a for a in arguments if a.kind in ("input", "inplace")]
        for output in (a for a in arguments if a.kind == "output"):
            if output.name in self.likes:
                continue
            same = next((i.name for i in inputs if self.dims.get(output.name) and self.dims.get(i.name) == self.dims[output.name]), None)
            if same is not None:
                self.likes[output.name] = same
                continue
            like = next((i.name for i in inputs if i.dtype == output.dtype), inputs[0].name if inputs else None)
            if like is None:
                raise self.fail(output.name, "is an output, and the launcher takes no input to shape it like")
            self.questions.append(q.Question(output.name, "an output's shape", f"--output {output.name}:like={like}", "the first input of its dtype"))
            self.likes[output.name] = like


def _int_dtype(base: str) -> str:
    return "i64" if base in wrap.WIDE_INTEGERS else "i32"
