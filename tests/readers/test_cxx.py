"""The C, C++ and CUDA reader: the API other parts of xlacc (doctor, `xlacc new --from`) rely on."""

from __future__ import annotations

from locations import ARTIFACTS_DIR

from xlacc.readers import cxx

SOURCES = ARTIFACTS_DIR / "doctor" / "sources"

KERNEL_FILE = r"""
#include <cuda_runtime.h>
#define EXPORT __attribute__((visibility("default")))
#define BLOCK 256

struct PagedParams {        // a vLLM-style kernel takes its sizes as one struct
  const float* __restrict__ q;
  float* out;
  int64_t num_seqs;
  int block_size;
  float scale;
};

template <typename T, int HEAD>
__global__ void __launch_bounds__(256) paged(const T* __restrict__ q, T* out, const int* lens, PagedParams p) {
  out[threadIdx.x] = q[threadIdx.x];
}

__device__ __forceinline__ float twice(float x) { return 2 * x; }

namespace {
void helper(float* x) { throw std::runtime_error("no"); }
}

extern "C" EXPORT void launch(cudaStream_t stream, const float* q, float* out, const int* lens, PagedParams p) {
  // paged<<<1, 1>>>(q, out, lens, p);   a comment, not a launch
  paged<float, 128><<<dim3(p.num_seqs, 1), BLOCK, 0, stream>>>(q, out, lens, p);
  try { helper(out); } catch (...) {}
  cudaError_t err = cudaGetLastError();
}
"""


def functions(text: str) -> dict[str, cxx.Function]:
    return {f.short_name: f for f in cxx.parse("k.cu", text).functions}


def test_kernels_and_host_functions_with_their_parameters():
    source = cxx.parse("k.cu", KERNEL_FILE)
    (kernel,) = source.kernels()
    assert kernel.name == "paged" and kernel.cuda == {"__global__"} and kernel.return_type == "void"
    assert kernel.template_params == ("typename T", "int HEAD")
    q, out, lens, p = kernel.params
    assert (q.name, q.type, q.base_type, q.pointer_depth, q.const_pointee, q.is_pointer) == ("q", "T*", "T", 1, True, True)
    assert (out.const_pointee, lens.type, lens.const_pointee) == (False, "int*", True)
    assert (p.type, p.is_scalar) == ("PagedParams", True)
    assert {f.short_name for f in source.host_functions()} == {"helper", "launch"}
    assert functions(KERNEL_FILE)["twice"].cuda == {"__device__"}


def test_linkage_visibility_and_the_body_range():
    launch = functions(KERNEL_FILE)["launch"]
    assert launch.extern_c and launch.visibility == "default" and not launch.internal
    assert launch.line == 25 and launch.body_lines == (25, 30)
    start, end = launch.body_range
    assert KERNEL_FILE.encode()[start:end].startswith(b"{") and KERNEL_FILE.encode()[start:end].endswith(b"}")
    assert "a comment" not in launch.body  # comments are blanked, lines kept
    assert launch.body.count("\n") == 5
    assert functions(KERNEL_FILE)["helper"].anonymous_namespace


def test_launches_give_kernel_template_config_and_arguments():
    (launch,) = functions(KERNEL_FILE)["launch"].launches
    assert (launch.kernel, launch.template_args) == ("paged", ("float", "128"))
    assert launch.config == ("dim3(p.num_seqs, 1)", "BLOCK", "0", "stream") and launch.stream == "stream"
    assert launch.args == ("q", "out", "lens", "p") and launch.line == 27


def test_launch_api_calls_are_launches_with_their_stream_and_whether_their_error_is_kept():
    text = """
xlacc::Status run(xlacc::Stream stream, const xlacc::Tensor& x) {
  cudaError_t err = xlacc::launch(k<T, 4>, blocks, 256, 0, stream, xp, n);
  cudaLaunchKernel((const void*)k<T>, dim3(blocks), dim3(256), args, 0, 0 /* stream */);
  cudaLaunchKernel(reinterpret_cast<const void*>(&k<float>), grid, block, args);
  cudaLaunchConfig_t config = {};
  config.gridDim = grid; config.blockDim = block; config.dynamicSmemBytes = 0; config.stream = stream;
  if (cudaLaunchKernelEx(&config, k<T>, xp, n) != cudaSuccess) return bad;
  cudaLaunchKernelEx(&elsewhere, k<T>, xp, n);
  cuLaunchKernel(function, gx, 1, 1, 128, 1, 1, 0, stream, params, nullptr);
  (void)xlacc::launch(k<T>, blocks, 256, 0, nullptr, xp, n);
  return xlacc::launch_status("k", err);
}
"""
    launches = functions(text)["run"].launches
    assert [(l.api, l.kernel, l.line) for l in launches] == [
        ("xlacc::launch", "k", 3), ("cudaLaunchKernel", "k", 4), ("cudaLaunchKernel", "k", 5), ("cudaLaunchKernelEx", "k", 8),
        ("cudaLaunchKernelEx", "k", 9), ("cuLaunchKernel", "function", 10), ("xlacc::launch", "k", 11),
    ]
    assert launches[0].template_args == ("T", "4") and launches[0].args == ("xp", "n")
    assert [l.stream for l in launches] == ["stream", "0", None, "stream", None, "stream", "nullptr"]
    assert [l.result_kept for l in launches] == [True, False, False, True, False, False, False]
    assert [l.stream_known for l in launches] == [True, True, True, True, False, True, True]
    assert launches[5].config[:2] == ("gx, 1, 1", "128, 1, 1") and launches[2].args == ()
    assert "launch_status" in {c.name for c in functions(text)["run"].calls}


def test_throws_outside_try_and_calls_inside_it():
    parsed = functions(KERNEL_FILE)
    assert [t.line for t in parsed["helper"].throws] == [22]
    assert parsed["launch"].throws == ()
    (call,) = parsed["launch"].calls_to("helper")
    assert call.in_try and call.args == ("out",)


def test_struct_fields_and_size():
    (struct,) = cxx.parse("k.cu", KERNEL_FILE).structs
    assert [(f.name, f.type) for f in struct.fields] == [
        ("q", "float*"), ("out", "float*"), ("num_seqs", "int64_t"), ("block_size", "int"), ("scale", "float"),
    ]
    assert struct.size() == 32  # 8 + 8 + 8 + 4 + 4
    packed = cxx.parse("k.h", "struct __attribute__((packed)) D { int64_t n; int k; };\nstruct E { int64_t n; int k; };\n").structs
    assert [s.size() for s in packed] == [12, 16]
    assert cxx.parse("k.h", "typedef struct { double a; char b[3]; } T;").structs[0].size() == 16
    assert cxx.parse("k.h", "struct U { Other o; };").structs[0].size() is None


def test_int_macros_aliases_and_extern_c_prototypes():
    source = cxx.parse("k.h", 'using S = cudaStream_t;\ntypedef CUstream_st* R;\n#define N (1024)\nextern "C" XLA_FFI_Error* h(XLA_FFI_CallFrame*);\n')
    assert source.type_aliases == {"S": "cudaStream_t", "R": "CUstream_st*"}
    assert source.int_macros == {"N": "1024"}
    assert source.declared_extern_c == {"h"}


def test_ffi_handler_macros_written_out_or_through_a_project_macro():
    text = """
#define BIND(NAME, IMPL, T) XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, IMPL, ffi::Ffi::Bind().Arg<ffi::Buffer<T>>().Ret<ffi::Buffer<T>>())
#define IMPLS(SUFFIX, T) \\
  ffi::Error add_##SUFFIX##_impl(cudaStream_t s, ffi::Buffer<T> x, ffi::ResultBuffer<T> y) { \\
    k<<<1, 1, 0, s>>>(x.typed_data(), y->typed_data());                                    \\
    return ffi::Error::Success();                                                          \\
  }
IMPLS(f32, ffi::F32)
BIND(add_f32, add_f32_impl, ffi::F32);
XLA_FFI_DEFINE_HANDLER(plain, plain_impl, ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>(), {ffi::Traits::kCmdBufferCompatible});
static constexpr XLA_FFI_Handler* lam = +[](XLA_FFI_CallFrame* frame) { return nullptr; };
"""
    source = cxx.parse("k.cu", text)
    uses = {u.args[0]: u for u in source.xla_macros}
    assert uses["add_f32"].via == "BIND" and uses["add_f32"].line == 9 and "Buffer<ffi::F32>" in uses["add_f32"].args[2]
    assert uses["plain"].macro == "XLA_FFI_DEFINE_HANDLER" and "kCmdBufferCompatible" in uses["plain"].args[3]
    impl = source.function("add_f32_impl")
    assert impl.from_macro == "IMPLS" and impl.line == 8 and impl.launches[0].stream == "s"
    assert source.function("lam").lambda_handler


def test_capsules_made_in_cpp_with_their_registration_names():
    text = """
pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["gpu_kepler_f32"] = EncapsulateFunction(gpu_kepler_f32);
  dict["ffi_op"] = nb::capsule(reinterpret_cast<void*>(FfiOp), "xla._CUSTOM_CALL_TARGET");
  return dict;
}
PYBIND11_MODULE(gpu_ops, m) { m.def("registrations", &Registrations); }
"""
    capsules = {c.function: c.key for c in cxx.parse("ops.cc", text).capsules}
    assert capsules == {"gpu_kepler_f32": "gpu_kepler_f32", "FfiOp": "ffi_op"}


def test_the_stages_of_one_target_in_a_nested_dict_take_its_name():
    """TransformerEngine's registrations: the target read as unregistered, and a rename suggested."""
    text = """
pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["te_attn_forward_ffi"] = pybind11::dict(pybind11::arg("prepare") = EncapsulateFFI(AttnPrepareHandler),
                                               pybind11::arg("execute") = EncapsulateFFI(AttnForwardHandler));
  return dict;
}
"""
    capsules = {c.function: c.key for c in cxx.parse("pybind.cpp", text).capsules}
    assert capsules == {"AttnPrepareHandler": "te_attn_forward_ffi", "AttnForwardHandler": "te_attn_forward_ffi"}


def test_strings_and_comments_never_make_facts():
    text = 'const char* s = "XLA_FFI_DEFINE_HANDLER_SYMBOL(a, b, c)";\n// XLA_FFI_DEFINE_HANDLER_SYMBOL(d, e, f)\n/* k<<<1,1>>>(x); */\n'
    source = cxx.parse("k.cc", text)
    assert source.xla_macros == [] and source.functions == []


def test_line_offset_for_a_block_of_a_document():
    (function,) = cxx.parse("note.md", "void f(cudaStream_t s) {\n  k<<<1, 1, 0, s>>>();\n}\n", line_offset=10).functions
    assert function.line == 11 and function.launches[0].line == 12


def test_a_seed_kernel_reads_as_before():
    source = cxx.parse("seed.cu", (SOURCES / "seed000_minimal_xla_custom_call.cu").read_text())
    entry = source.function("XlaGpuSimpleAdd")
    assert entry.extern_c and entry.visibility == "default"
    assert [p.type for p in entry.params] == ["cudaStream_t", "void**", "char*", "size_t"]
    assert entry.launches[0].args == ("a", "b", "out", "size")


def test_broken_code_gives_what_it_can():
    source = cxx.parse("k.cu", "void ok(int x) { k<<<1, 1>>>(x); }\nvoid broken( { ;; }}}\n" + "(" * 5000)
    assert source.function("ok") is not None and source.errors >= 1
