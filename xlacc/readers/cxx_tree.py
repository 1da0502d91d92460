"""Walking a tree-sitter syntax tree of C, C++ or CUDA into the facts of :mod:`xlacc.readers.cxx_facts`."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from xlacc.readers.cxx_facts import (
    CONTAINERS,
    CUDA_QUALIFIERS,
    DISCARDED_BY,
    EXPORT_MACRO,
    LAUNCH_APIS,
    CallSite,
    CxxSource,
    Function,
    Launch,
    Param,
    Struct,
    Throw,
)
from xlacc.readers.cxx_macros import (
    IDENTIFIER,
    split_arguments,
)


def one_line(data: bytes) -> str:
    return " ".join(data.decode("utf-8", "replace").split())


@dataclass(frozen=True)
class _Context:
    extern_c: bool = False
    anonymous: bool = False
    member: bool = False
    template_params: tuple[str, ...] = ()


class TreeReader:
    """One pass over a syntax tree: declarations by walking, bodies by one tree-sitter query."""

    def __init__(self, source: CxxSource, prepared: bytes, raw: bytes, line_offset: int, line: int | None, via: str | None):
        self.source = source
        self.prepared = prepared
        self.raw = raw
        self.line_offset = line_offset
        self.pinned_line = line
        self.via = via
        self.functions: list[Function] = []
        self.blanks: list[tuple[int, int]] = []  # comments and strings
        self.strings: list[tuple[int, int]] = []
        self.preprocessor: list[tuple[int, int]] = []
        self.guarded_ranges: list[tuple[int, int]] = []  # try blocks and lambdas
        self.newlines: list[int] | None = None  # offsets of the text's line ends, read once when asked

    def line(self, node) -> int:
        return self.pinned_line if self.pinned_line is not None else self.line_offset + node.start_point.row + 1

    def text(self, node) -> str:
        return one_line(self.raw[node.start_byte : node.end_byte])

    # -- declarations --
    def read(self, root) -> None:
        stack = [(root, _Context())]
        while stack:
            node, context = stack.pop()
            kind = node.type
            self.source.errors += kind == "ERROR"
            if kind == "function_definition":
                self.function(node, context)
                continue
            if kind in ("preproc_def", "preproc_function_def", "preproc_include", "preproc_call"):
                self.preprocessor.append((node.start_byte, node.end_byte))
                continue
            if kind == "declaration":
                self.declaration(node, context)
            elif kind in ("alias_declaration", "type_definition"):
                self.alias(node)
            if kind in ("struct_specifier", "class_specifier", "union_specifier"):
                self.struct(node)
                context = _Context(context.extern_c, context.anonymous, True, context.template_params)
            elif kind == "linkage_specification":
                value = node.child_by_field_name("value")
                context = _Context(bool(value is not None and b'"C"' in value.text), context.anonymous, context.member, context.template_params)
            elif kind == "namespace_definition":
                anonymous = node.child_by_field_name("name") is None
                context = _Context(context.extern_c, context.anonymous or anonymous, context.member, context.template_params)
            elif kind == "template_declaration":
                params = node.child_by_field_name("parameters")
                names = tuple(self.text(c) for c in params.named_children) if params is not None else ()
                context = _Context(context.extern_c, context.anonymous, context.member, names)
            stack.extend((child, context) for child in reversed(node.children) if child.type in CONTAINERS)

    def function(self, node, context: _Context) -> None:
        declarator = node.child_by_field_name("declarator")
        function_declarator = _find_function_declarator(declarator)
        body = node.child_by_field_name("body")
        if function_declarator is None or body is None:
            return
        name_node = function_declarator.child_by_field_name("declarator")
        if name_node is None:
            return
        name = _declarator_name(name_node)
        head = one_line(self.raw[_head_start(self.raw, node.start_byte) : name_node.start_byte])
        params = function_declarator.child_by_field_name("parameters")
        self.add_function(
            name=name,
            return_type=self._return_type(node, declarator, function_declarator),
            params=self.params(params),
            cuda=frozenset(c.type for c in node.children if c.type in CUDA_QUALIFIERS),
            context=context,
            static=any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children),
            head=head,
            name_node=name_node,
            body=body,
        )

    def add_function(self, *, name, return_type, params, cuda, context, static, head, name_node, body, lambda_handler=False) -> None:
        self.functions.append(
            Function(
                name=name,
                return_type=return_type,
                params=params,
                cuda=cuda,
                template_params=context.template_params,
                extern_c=context.extern_c or 'extern "C"' in head,
                static=static,
                anonymous_namespace=context.anonymous,
                member=context.member,
                visibility=self._visibility(head),
                head=head,
                line=self.line(name_node),
                body_lines=(self.line(body), self.pinned_line or self.line_offset + body.end_point.row + 1),
                body_range=(body.start_byte, body.end_byte),
                body=self.raw[body.start_byte : body.end_byte].decode("utf-8", "replace"),
                lambda_handler=lambda_handler,
                from_macro=self.via,
                source=self.source.name,
            )
        )

    def _return_type(self, node, declarator, function_declarator) -> str:
        type_node = node.child_by_field_name("type")
        text = self.text(type_node) if type_node is not None else ""
        if declarator is not None and declarator is not function_declarator:
            text += "*" * _pointer_depth_to(declarator, function_declarator)
        return text

    def _visibility(self, head: str) -> str | None:
        compact = head.replace(" ", "")
        if 'visibility("hidden")' in compact:
            return "hidden"
        if 'visibility("default")' in compact or EXPORT_MACRO.search(head.encode()):
            return "default"
        for word in IDENTIFIER.findall(head):
            macro = self.source.macros.get(word)
            if macro is not None and 'visibility("default")' in macro.body.replace(" ", ""):
                return "default"
        return None

    def params(self, node) -> tuple[Param, ...]:
        if node is None:
            return ()
        found = []
        for child in node.named_children:
            if child.type in ("parameter_declaration", "optional_parameter_declaration"):
                found.append(self.declared(child, child.child_by_field_name("declarator")))
        return tuple(p for p in found if not (p.type == "void" and not p.name))

    def declared(self, node, declarator) -> Param:
        """A parameter or field: ``node`` holds the type and qualifiers, ``declarator`` the name and pointers."""
        type_node = node.child_by_field_name("type")
        base = self.text(type_node) if type_node is not None else ""
        const = any(c.type == "type_qualifier" and c.text == b"const" for c in node.children)
        depth, reference, array, name = 0, False, None, ""
        current = declarator
        while current is not None:
            kind = current.type
            if kind in ("pointer_declarator", "abstract_pointer_declarator"):
                depth += 1
            elif kind in ("reference_declarator", "abstract_reference_declarator"):
                reference = True
            elif kind in ("array_declarator", "abstract_array_declarator"):
                depth += 0 if node.type == "field_declaration" else 1
                size = current.child_by_field_name("size")
                array = self.text(size) if size is not None else array
            elif kind in ("identifier", "field_identifier"):
                name = self.text(current)
                break
            elif kind == "function_declarator":  # a function pointer parameter
                depth += 1
            nxt = current.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in current.named_children if c.type != "type_qualifier"), None)
            current = nxt
        base = re.sub(r"\b(?:const|volatile|struct|class|enum|__restrict__|__restrict|restrict)\b", " ", base)
        base = re.sub(r"\s*::\s*", "::", " ".join(base.split()))
        return Param(
            name=name,
            type=base + "*" * depth + ("&" if reference else ""),
            base_type=base,
            pointer_depth=depth,
            const_pointee=const,
            reference=reference,
            text=self.text(node),
            array_size=array,
        )

    def declaration(self, node, context: _Context) -> None:
        """Prototypes inside extern "C", and ``XLA_FFI_Handler* h = +[](XLA_FFI_CallFrame*) {...}``."""
        type_node = node.child_by_field_name("type")
        type_text = self.text(type_node) if type_node is not None else ""
        for declarator in node.children_by_field_name("declarator"):
            function_declarator = _find_function_declarator(declarator)
            if function_declarator is not None and context.extern_c:
                name_node = function_declarator.child_by_field_name("declarator")
                if name_node is not None:
                    self.source.declared_extern_c.add(_declarator_name(name_node).rsplit("::", 1)[-1])
            if type_text.endswith("XLA_FFI_Handler") and declarator.type == "init_declarator":
                self.lambda_handler(node, declarator, context)

    def lambda_handler(self, node, declarator, context: _Context) -> None:
        value = declarator.child_by_field_name("value")
        target = declarator.child_by_field_name("declarator")
        lambda_node = _first_of(value, "lambda_expression")
        if lambda_node is None or target is None:
            return
        body = lambda_node.child_by_field_name("body")
        lambda_declarator = lambda_node.child_by_field_name("declarator")
        params = lambda_declarator.child_by_field_name("parameters") if lambda_declarator is not None else None
        name_node = _first_of(target, "identifier") or target
        if body is None:
            return
        self.add_function(
            name=self.text(name_node),
            return_type="XLA_FFI_Error*",
            params=self.params(params),
            cuda=frozenset(),
            context=context,
            static=any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children),
            head=one_line(self.raw[node.start_byte : name_node.start_byte]),
            name_node=name_node,
            body=body,
            lambda_handler=True,
        )

    def alias(self, node) -> None:
        if node.type == "alias_declaration":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("type")
            if name is not None and value is not None:
                self.source.type_aliases[self.text(name)] = self.text(value)
            return
        type_node = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            depth = _pointer_depth_to(declarator, None)
            name_node = _first_of(declarator, "type_identifier") or declarator
            if type_node is not None and type_node.type not in ("struct_specifier", "class_specifier"):
                self.source.type_aliases[self.text(name_node)] = self.text(type_node) + "*" * depth
            elif type_node is not None and type_node.child_by_field_name("name") is None:
                self.struct(type_node, name=self.text(name_node))

    def struct(self, node, name: str | None = None) -> None:
        body = node.child_by_field_name("body")
        name_node = node.child_by_field_name("name")
        name = name or (self.text(name_node) if name_node is not None else None)
        if body is None or not name:
            return
        fields = []
        for member in body.named_children:
            if member.type != "field_declaration":
                continue
            for declarator in member.children_by_field_name("declarator"):
                if _find_function_declarator(declarator) is None:
                    fields.append(self.declared(member, declarator))
        packed = b"packed" in node.text[: node.text.find(b"{")] if b"{" in node.text else False
        self.source.structs.append(Struct(name.rsplit("::", 1)[-1], tuple(fields), self.line(node), packed))

    # -- bodies --
    def bodies(self, captures: dict) -> None:
        """Launches, calls and throws, each given to the innermost function whose body holds it."""
        for kind in ("comment", "string"):
            self.blanks.extend((n.start_byte, n.end_byte) for n in captures.get(kind, ()))
        self.strings.extend((n.start_byte, n.end_byte) for n in captures.get("string", ()))
        if not self.functions:
            return
        ordered = sorted(range(len(self.functions)), key=lambda i: self.functions[i].body_range[0])
        starts = [self.functions[i].body_range[0] for i in ordered]

        def owner(offset: int) -> int | None:
            index = bisect.bisect_right(starts, offset) - 1
            while index >= 0:
                candidate = ordered[index]
                start, end = self.functions[candidate].body_range
                if start <= offset < end:
                    return candidate
                index -= 1
            return None

        guarded = [(n.child_by_field_name("body") or n) for n in captures.get("try", ())]
        lambdas = list(captures.get("lambda", ()))
        self.guarded_ranges = [(n.start_byte, n.end_byte) for n in guarded + lambdas]
        once = _call_once_lambdas(captures.get("call", ()), lambdas, self.text)
        launches: dict[int, list[Launch]] = {}
        calls: dict[int, list[CallSite]] = {}
        throws: dict[int, list[Throw]] = {}
        for node in sorted(captures.get("call", ()), key=lambda n: n.start_byte):
            index = owner(node.start_byte)
            if index is None:
                continue
            syntax = _first_child(node, "kernel_call_syntax")
            if syntax is not None:
                launches.setdefault(index, []).append(self.launch(node, syntax))
            else:
                inside = self.functions[index].body_range[0]
                site = self.call(node, _within(node, guarded, after=inside), _within(node, once, after=inside))
                if site is not None:
                    calls.setdefault(index, []).append(site)
                    launched = self.api_launch(node, site, self.functions[index])
                    if launched is not None:
                        launches.setdefault(index, []).append(launched)
        for node in sorted(captures.get("throw", ()), key=lambda n: n.start_byte):
            index = owner(node.start_byte)
            if index is None:
                continue
            inside = self.functions[index].body_range[0]
            if _within(node, guarded, after=inside) or _within(node, lambdas, after=inside):
                continue
            throws.setdefault(index, []).append(Throw(self.line(node), self.text(node)))
        for index, function in enumerate(self.functions):
            function.launches = tuple(launches.get(index, ()))
            function.calls = tuple(calls.get(index, ()))
            function.throws = tuple(throws.get(index, ()))

    def launch(self, node, syntax) -> Launch:
        callee = node.child_by_field_name("function")
        template_args: tuple[str, ...] = ()
        kernel = self.text(callee) if callee is not None else ""
        if callee is not None and callee.type == "template_function":
            name = callee.child_by_field_name("name")
            arguments = callee.child_by_field_name("arguments")
            kernel = self.text(name) if name is not None else kernel
            template_args = tuple(self.text(a) for a in arguments.named_children) if arguments is not None else ()
        arguments = node.child_by_field_name("arguments")
        return Launch(
            kernel=kernel,
            template_args=template_args,
            config=tuple(self.text(c) for c in syntax.named_children if c.type != "comment"),
            args=tuple(self.text(a) for a in arguments.named_children if a.type != "comment") if arguments is not None else (),
            line=self.line(node),
            start=node.start_byte,
            end=node.end_byte,
            text=self.text(node),
        )

    def api_launch(self, node, site: CallSite, function: Function) -> Launch | None:
        """A call to one of :data:`LAUNCH_APIS` as a launch; None for any other call."""
        api = LAUNCH_APIS.get(site.qualified.lstrip(":"))
        if api is None and site.name.startswith(("cu", "hip")):  # the C APIs, however they are qualified
            api = LAUNCH_APIS.get(site.name)
        if api is None or len(site.args) <= api.kernel:
            return None
        kernel, template_args = _launched_kernel(site.args[api.kernel])
        if api.config_struct is not None:
            config = _config_fields(site.args[api.config_struct], api.fields, function.body)
        else:
            config = tuple(", ".join(site.args[i] for i in group) for group in api.config if group[-1] < len(site.args))
        parent = node.parent
        return Launch(
            kernel=kernel,
            template_args=template_args,
            config=config,
            args=site.args[api.args :] if api.args is not None else (),
            line=site.line,
            start=node.start_byte,
            end=node.end_byte,
            text=site.text,
            api=site.qualified.lstrip(":"),
            result_kept=parent is not None and parent.type not in DISCARDED_BY,
            stream_known=api.config_struct is None or len(config) == 4,
        )

    def call(self, node, in_try: bool, once: bool = False) -> CallSite | None:
        callee = node.child_by_field_name("function")
        if callee is None:
            return None
        if callee.type == "template_function":
            callee = callee.child_by_field_name("name") or callee
        if callee.type not in ("identifier", "qualified_identifier", "field_expression"):
            return None
        qualified = self.text(callee)
        if callee.type == "field_expression":
            member = callee.child_by_field_name("field")
            name = self.text(member) if member is not None else qualified
            qualified = "." + name
        else:
            name = qualified.rsplit("::", 1)[-1]
        name = name.split("<", 1)[0]
        arguments = node.child_by_field_name("arguments")
        return CallSite(
            name=name,
            qualified=qualified,
            args=tuple(self.text(a) for a in arguments.named_children if a.type != "comment") if arguments is not None else (),
            line=self.line(node),
            start=node.start_byte,
            text=self.text(node)[:300],
            in_try=in_try,
            once=once,
        )

    def line_of_offset(self, offset: int) -> int:
        if self.pinned_line is not None:
            return self.pinned_line
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer(rb"\n", self.raw)]
        return self.line_offset + bisect.bisect_left(self.newlines, offset) + 1

    def guarded_at(self, offset: int) -> bool:
        """Inside a try block or a lambda (whose throws are not the enclosing function's)."""
        return any(start <= offset < end for start, end in self.guarded_ranges)

    def skeleton(self) -> bytes:
        """The text with comments, strings and preprocessor directives blanked (lengths kept)."""
        out = bytearray(self.prepared)
        for start, end in self.blanks + self.preprocessor:
            out[start:end] = re.sub(rb"[^\n]", b" ", bytes(out[start:end]))
        return bytes(out)


def _head_start(raw: bytes, start: int) -> int:
    """Where a declaration really starts: macros blanked before parsing (``EXPORT void f()``) lie
    between the previous ``;``, ``{``, ``}`` or preprocessor line and the node the tree saw."""
    window = raw[max(0, start - 300) : start]
    cut = max(window.rfind(b";"), window.rfind(b"{"), window.rfind(b"}"))
    lines = window[cut + 1 :].split(b"\n")
    keep = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].lstrip().startswith((b"#", b"//")):
            break
        keep = index
    return start - len(b"\n".join(lines[keep:]))


def _launched_kernel(expression: str) -> tuple[str, tuple[str, ...]]:
    """``(const void*)ns::k<T, 4>`` (or ``reinterpret_cast<void*>(&k<T>)``) -> ("ns::k", ("T", "4"))."""
    text = re.sub(r"^\s*(?:\(\s*[\w:\s*]+\)\s*)+", "", expression)  # C-style casts
    cast = re.match(r"^\s*\w+_cast\s*<.*?>\s*\((.*)\)\s*$", text)
    text = (cast.group(1) if cast else text).strip().lstrip("&").strip()
    match = re.match(r"^([A-Za-z_][\w:]*)\s*(?:<(.*)>)?\s*$", text)
    if match is None:
        return text, ()
    return match.group(1), tuple(split_arguments(match.group(2))) if match.group(2) else ()


def _config_fields(config: str, fields: tuple[str, ...], body: str) -> tuple[str, ...]:
    """Grid, block, shared bytes and stream of a launch config struct (``&config``), from the
    assignments to its ``fields`` in the calling function (``config.stream = s;``, ``.stream = s``
    in an initialiser). Shorter where a field is not found there: the fields after it stay unknown."""
    name = re.escape(config.strip().lstrip("&").strip())
    found = []
    for field_name in fields:
        match = re.search(rf"\b{name}\s*(?:\.|->)\s*{field_name}\s*=\s*([^;]+);", body) or re.search(
            rf"(?<![\w\]\)])\.\s*{field_name}\s*=\s*([^,;}}]+)", body
        )
        if match is None:
            break
        found.append(" ".join(match.group(1).split()))
    return tuple(found)


def _find_function_declarator(node):
    """The function_declarator under pointer/reference declarators (``int* f(...)``)."""
    while node is not None:
        if node.type == "function_declarator":
            return node
        if node.type not in ("pointer_declarator", "reference_declarator", "parenthesized_declarator", "attributed_declarator"):
            return None
        node = node.child_by_field_name("declarator") or next(iter(node.named_children), None)
    return None


def _pointer_depth_to(node, stop) -> int:
    depth = 0
    while node is not None and node is not stop:
        if node.type in ("pointer_declarator", "abstract_pointer_declarator"):
            depth += 1
        elif node.type not in ("reference_declarator", "parenthesized_declarator", "attributed_declarator"):
            break
        node = node.child_by_field_name("declarator")
    return depth


def _declarator_name(node) -> str:
    text = node.text.decode("utf-8", "replace")
    return re.sub(r"\s+", "", text)


def _first_of(node, kind: str):
    """The first node of ``kind`` in a subtree (breadth first), or None."""
    if node is None:
        return None
    queue = [node]
    while queue:
        current = queue.pop(0)
        if current.type == kind:
            return current
        queue.extend(current.named_children)
    return None


def _first_child(node, kind: str):
    return next((c for c in node.children if c.type == kind), None)


def _call_once_lambdas(calls, lambdas, text) -> list:
    """The lambdas that `std::call_once(flag, f)` calls run: written in the call, or the nearest
    lambda before it assigned to the name it passes (``auto init = [&] {...}; std::call_once(flag, init);``)."""
    found = []
    for node in calls:
        callee, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if callee is None or arguments is None or not text(callee).endswith("call_once") or len(arguments.named_children) < 2:
            continue
        callable_ = arguments.named_children[1]
        if callable_.type == "lambda_expression":
            found.append(callable_)
        elif callable_.type == "identifier":
            named = [l for l in lambdas if l.end_byte <= node.start_byte and _assigned_name(l, text) == text(callable_)]
            found.extend(named[-1:])
    return found


def _assigned_name(lambda_node, text) -> str | None:
    """``init`` of ``auto init = [&] {...}``; None for a lambda written elsewhere."""
    parent = lambda_node.parent
    if parent is None or parent.type != "init_declarator":
        return None
    declarator = parent.child_by_field_name("declarator")
    return text(declarator) if declarator is not None else None


def _within(node, containers, after: int) -> bool:
    """Is ``node`` inside one of ``containers`` that starts at or after byte ``after``?"""
    start = node.start_byte
    return any(after <= c.start_byte <= start < c.end_byte for c in containers)
