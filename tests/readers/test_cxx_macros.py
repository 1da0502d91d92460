"""A project's own macros, expanded once per file: the throws, calls and launches of a macro
invoked inside a function belong to that function, at the invocation's line."""

from __future__ import annotations

import time

from xlacc.readers import cxx
from xlacc.readers.cxx_macros import Invocation, arch_specific_guards, expand_fully, macro_definitions

CHECK = """
#define CHECK_STATUS(call)                              \\
  do {                                                  \\
    int status_ = (call);                               \\
    if (status_ != 0) throw std::runtime_error("bad");  \\
  } while (0)
"""


def test_a_throw_inside_a_status_macro_is_the_functions_at_the_invocation():
    source = cxx.parse("k.cc", CHECK + "int run(int x) {\n  CHECK_STATUS(step(x));\n  return 0;\n}\n")
    run = source.function("run")
    (throw,) = run.throws
    assert (throw.line, throw.via) == (8, "CHECK_STATUS")
    assert "runtime_error" in throw.text
    assert [c.name for c in run.calls if c.name == "step"] == ["step"]  # seen once, not twice


def test_an_expression_macro_s_call_belongs_to_the_function():
    """`HIP_CHECK(x);` expanding to `::ns::check((x), __FILE__, __LINE__)` (no `;` of its own):
    the call it makes is the function's, so what `check` does (abort, throw) is followed."""
    checked = "#define HIP_CHECK(expr) ::ns::check((expr), __FILE__, __LINE__)\n"
    source = cxx.parse("k.cc", checked + "int run(int x) {\n  HIP_CHECK(step(x));\n  return 0;\n}\n")
    calls = {c.qualified: c.line for c in source.function("run").calls}
    assert calls["::ns::check"] == 3 and "step" in calls


def test_a_macro_invoked_inside_a_try_block_throws_nothing_out():
    source = cxx.parse("k.cc", CHECK + "int run(int x) {\n  try { CHECK_STATUS(step(x)); } catch (...) { return 1; }\n  return 0;\n}\n")
    assert source.function("run").throws == ()


def test_macros_from_another_file_and_macros_within_macros_expand():
    header = macro_definitions("#define FAIL(msg) throw std::logic_error(msg)\n#define REQUIRE(c) do { if (!(c)) FAIL(#c); } while (0)\n")
    source = cxx.parse("k.cc", "void f(int n) {\n  REQUIRE(n > 0);\n}\n", macros=header)
    (throw,) = source.function("f").throws
    assert throw.via == "REQUIRE" and "logic_error" in throw.text


def test_a_switch_dispatch_macro_around_a_body_makes_its_calls_and_default_visible():
    dispatch = """
#define DISPATCH_FLOAT(dtype, T, ...)           \\
  switch (dtype) {                              \\
    case F32: { using T = float; __VA_ARGS__ } break;  \\
    case F64: { using T = double; __VA_ARGS__ } break; \\
    default: throw std::invalid_argument("dtype");     \\
  }
"""
    text = dispatch + "int run(int dtype, void* p) {\n  DISPATCH_FLOAT(dtype, T, { scale<T>(p); });\n  return 0;\n}\n"
    run = cxx.parse("k.cc", text).function("run")
    assert "scale" in {c.name for c in run.calls}
    assert [t.via for t in run.throws] == ["DISPATCH_FLOAT"]


def test_a_dispatch_macro_that_returns_the_implementation_is_followed_to_it():
    dispatch = "#define SOLVE_DISPATCH(impl, ...) switch (dtype) { case 1: return impl<float>(__VA_ARGS__); default: break; }\n"
    text = dispatch + "int SolveImpl(int n) { return n; }\nint Solve(int dtype, int n) {\n  SOLVE_DISPATCH(SolveImpl, n)\n  return -1;\n}\n"
    solve = cxx.parse("k.cc", text).function("Solve")
    assert "SolveImpl" in {c.name for c in solve.calls}


def test_each_distinct_expansion_is_parsed_once_per_file():
    body = "".join(f"  CHECK_STATUS(step({i % 2}));\n" for i in range(40))
    source = cxx.parse("k.cc", CHECK + "void run() {\n" + body + "}\nvoid again() {\n" + body + "}\n")
    assert len(source.expanded) == 2
    assert len(source.function("run").throws) == 40


def test_a_macro_that_expands_to_itself_stops():
    macros = macro_definitions("#define LOOP(x) LOOP(x) + LOOP(x)\n")
    text = expand_fully(Invocation("LOOP", ("1",), 0, 7), macros)
    assert text is None or len(text) < 100_000
    source = cxx.parse("k.cc", "#define LOOP(x) LOOP(x) + LOOP(x)\nint f() { return LOOP(1); }\n")
    assert source.function("f") is not None


def test_parameters_are_not_replaced_inside_string_literals():
    (macro,) = macro_definitions('#define FAIL(dtype) throw std::runtime_error("bad dtype: " #dtype)\n').values()
    assert expand_fully(Invocation("FAIL", ("x.type()",), 0, 14), {"FAIL": macro}) == 'throw std::runtime_error("bad dtype: " "x.type()")'


def test_expansions_stop_at_a_budget_linear_in_the_file():
    big = "#define BIG(x) " + " ".join(f"s{i}(x);" for i in range(1800)) + "\n"
    body = "".join(f"  BIG({i});\n" for i in range(400))  # 400 distinct expansions of ~17 KB each
    text = big + "void run() {\n" + body + "}\n"
    source = cxx.parse("k.cc", text)
    assert 0 < source.expanded_chars <= max(200_000, 4 * len(text)) + 20_000
    assert len(source.expanded) < 400


def test_a_body_full_of_unclosed_invocations_is_read_in_linear_time():
    text = CHECK + "void run() {\n" + "  CHECK_STATUS(\n" * 20_000 + "}\n"
    start = time.process_time()
    cxx.parse("k.cc", text)
    assert time.process_time() - start < 10  # each unclosed one read 50 KB ahead: many minutes


def test_arch_specific_guards_are_the_archs_whose_feature_macro_is_tested():
    text = b"#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#elif __CUDA_ARCH_FEAT_SM100_ALL\n#endif\n// __CUDA_ARCH__ alone is not one\n"
    assert arch_specific_guards(text) == {90, 100}
    assert arch_specific_guards(b"#if __CUDA_ARCH__ >= 900\n#endif\n") == set()
