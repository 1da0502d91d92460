"""What XLA calls: the deprecated legacy signature and exceptions leaving a handler, each told once
for all the entry points that share it, with every place."""

from __future__ import annotations

from xlacc.commands.doctor import analysis
from xlacc.commands.doctor.inputs import SourceFile

LEGACY = 'extern "C" void {name}(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {{ {body} }}\n'
TYPED = """ffi::Error NAMEImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
BODY
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, NAMEImpl, ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
"""


def typed(name: str, body: str) -> str:
    return TYPED.replace("NAME", name).replace("BODY", body)


def findings(code: str, *texts: str):
    files = [SourceFile(f"k{i}.cu", "c", text, f"k{i}.cu") for i, text in enumerate(texts)]
    report = analysis.analyze(files)
    return [f for fs in report.by_group.values() for f in fs if f.code == code]


def test_every_legacy_entry_point_is_named_in_one_deprecation_finding():
    text = "".join(LEGACY.format(name=f"op_{i}", body="") for i in range(57))
    (finding,) = findings("legacy-api-deprecated", text)
    assert "op_0 (k0.cu:1) and 56 other entry points are" in finding.evidence
    assert all(f"op_{i} (k0.cu:{i + 1})" in finding.evidence for i in range(57))


def test_entry_points_throwing_through_one_helper_are_one_finding_with_their_places():
    helper = 'static void check(int n) { if (n < 0) throw std::runtime_error("negative"); }\n'
    text = helper + "".join(LEGACY.format(name=f"op_{i}", body="check(-1);") for i in range(3))
    (finding,) = findings("exception-escapes", text)
    assert finding.evidence.startswith("op_0 (k0.cu:2) and 2 other entry points can throw: in check, which they run,")
    assert "also: op_1 (k0.cu:3), op_2 (k0.cu:4)" in finding.evidence


def test_different_things_thrown_are_told_apart():
    text = LEGACY.format(name="a", body='throw std::runtime_error("a");') + LEGACY.format(name="b", body="throw 1;")
    assert len(findings("exception-escapes", text)) == 2


def test_an_exception_escaping_a_typed_handler_through_a_project_switch_macro():
    macros = """#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;
#define TYPE_SWITCH(dtype, T, ...)                                 \\
  switch (dtype) {                                                 \\
    case ffi::F32: { using T = float; { __VA_ARGS__ } } break;     \\
    default: throw std::runtime_error("unsupported dtype");        \\
  }
"""
    body = "  TYPE_SWITCH(x.element_type(), T, { scale<T>(x.typed_data(), y->typed_data(), stream); });"
    (finding,) = findings("exception-escapes", macros + typed("Scale", body))
    assert "Scale (k0.cu:12)" in finding.evidence
    assert "`TYPE_SWITCH(...)` (k0.cu:9) expands to `throw std::runtime_error(\"unsupported dtype\");`" in finding.evidence


def test_a_status_macro_from_a_header_throws_through_every_handler_that_uses_it():
    header = '#define CHECK_OK(call) do { if ((call) != 0) throw std::exception(); } while (0)\n'
    source = '#include "xla/ffi/api/ffi.h"\n#include "checks.h"\nnamespace ffi = xla::ffi;\n'
    source += typed("A", "  CHECK_OK(prepare());") + typed("B", "  CHECK_OK(prepare());")
    files = [SourceFile("checks.h", "c", header, "checks.h"), SourceFile("ops.cc", "c", source, "ops.cc")]
    report = analysis.analyze(files)
    (finding,) = [f for fs in report.by_group.values() for f in fs if f.code == "exception-escapes"]
    assert "A (ops.cc:8) and 1 other entry point" in finding.evidence and "B (ops.cc:13" in finding.evidence


def test_a_throw_caught_around_the_macro_does_not_escape():
    macros = '#include "xla/ffi/api/ffi.h"\nnamespace ffi = xla::ffi;\n#define CHECK_OK(call) do { if ((call) != 0) throw std::exception(); } while (0)\n'
    body = "  try { CHECK_OK(prepare()); } catch (const std::exception&) { return ffi::Error::Internal(\"prepare\"); }"
    assert findings("exception-escapes", macros + typed("A", body)) == []


def test_static_registration_in_code_built_with_xla_itself_is_no_ld_preload():
    handler = "#include \"xla/ffi/api/ffi.h\"\nINCLUDEnamespace ffi = xla::ffi;\n" + typed("A", "")
    register = 'XLA_FFI_REGISTER_HANDLER(ffi::GetXlaFfiApi(), "a", "CUDA", A);\n'
    assert findings("ld-preload", handler.replace("INCLUDE", "") + register)  # a library loaded into jaxlib: it never registers
    assert findings("ld-preload", handler.replace("INCLUDE", "#include \"xla/ffi/ffi_api.h\"\n") + register) == []


DEFS = """#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;
#define OP_BINDING ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>()
#define DEFINE_OP(NAME) XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME##_ffi, NAME##_impl, OP_BINDING)
#define LOCAL_OP(VAR, FN) XLA_FFI_DEFINE_HANDLER(VAR, FN, OP_BINDING)
"""
IMPLS = """#include "defs.h"
ffi::Error relu_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  if (x.element_count() == 0) throw std::runtime_error("empty");
  return ffi::Error::Success();
}
ffi::Error gelu_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  if (x.element_count() == 0) throw std::invalid_argument("empty");
  return ffi::Error::Success();
}
"""


def test_handlers_a_project_macro_defines_are_seen_at_file_scope_and_inside_a_function():
    uses = IMPLS + "namespace ops {\nDEFINE_OP(relu);\n}\nvoid* capsules() {\n  LOCAL_OP(gelu_handler, gelu_impl);\n  return reinterpret_cast<void*>(gelu_handler);\n}\n"
    report = analysis.analyze([SourceFile("defs.h", "c", DEFS, "defs.h"), SourceFile("ops.cc", "c", uses, "ops.cc")])
    escapes = sorted(f.evidence.split(" (")[0] for fs in report.by_group.values() for f in fs if f.code == "exception-escapes")
    assert escapes == ["gelu_handler", "relu_ffi"]


def test_an_error_check_that_aborts_ends_the_process_of_every_handler_that_uses_it():
    """A HIP_CHECK that prints and calls std::abort() (an attention library did): XLA and Python get
    no error to report; the place is told once, naming the handlers that reach it."""
    check = (
        "namespace ns {\ninline void check(int err, const char* file, int line) {\n"
        "  if (err != 0) { fprintf(stderr, \"%s:%d\", file, line); std::abort(); }\n}\n}\n"
        "#define HIP_CHECK(expr) ::ns::check((expr), __FILE__, __LINE__)\n"
    )
    text = check + typed("Fwd", "  HIP_CHECK(step());") + typed("Bwd", "  HIP_CHECK(step());")
    (finding,) = findings("handler-exits", text)
    assert "and 1 other entry point can end the process: in check, which it runs, `std::abort()` at k0.cu:3" in finding.evidence
    assert findings("handler-exits", typed("Ok", "  if (step() != 0) return ffi::Error::Internal(\"step\");")) == []


def test_exit_is_the_process_s_but_a_method_named_exit_is_not():
    assert len(findings("handler-exits", typed("Op", "  if (step() != 0) exit(1);"))) == 1
    assert findings("handler-exits", typed("Op", "  pool.exit();\n  scope.terminate();")) == []
