"""How an entry point reads its buffers against how its callers pass operands, the target named
at run time included."""

from __future__ import annotations

from xlacc.commands.doctor import analysis
from xlacc.commands.doctor.inputs import SourceFile

KERNEL = """#include <cuda_runtime.h>
template <typename T> __global__ void scale_kernel(const T* x, T* y) { y[threadIdx.x] = 2 * x[threadIdx.x]; }

template <typename T>
void scale(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  T* out = reinterpret_cast<T*>(buffers[0]);
  const T* in = reinterpret_cast<const T*>(buffers[1]);
  scale_kernel<T><<<1, 256, 0, stream>>>(in, out);
}

extern "C" void op_f32(cudaStream_t s, void** b, const char* o, size_t n) { scale<float>(s, b, o, n); }
extern "C" void op_f64(cudaStream_t s, void** b, const char* o, size_t n) { scale<double>(s, b, o, n); }
"""
PYTHON = """import ctypes
import jax

lib = ctypes.CDLL("./libops.so")
for name in ("op_f32", "op_f64"):
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, name)), platform="CUDA", api_version=0)


def scale(x, kind):
    return jax.ffi.ffi_call(CALLED, jax.ShapeDtypeStruct(x.shape, x.dtype), custom_call_api_version=1)(x)
"""


def buffer_order(*files: tuple[str, str]):
    report = analysis.analyze([SourceFile(name, "py" if name.endswith(".py") else "c", text, name) for name, text in files])
    return [f for f in report.cross if f.code == "buffer-order"]


def test_a_target_named_at_run_time_is_checked_against_every_entry_point_it_names():
    found = buffer_order(("ops.cu", KERNEL), ("ops.py", PYTHON.replace("CALLED", 'f"op_{kind}"')))
    assert sorted(f.evidence.split(" (")[0] for f in found) == ["op_f32", "op_f64"]
    assert all("writes `out` = buffers[0], operand 0" in f.evidence and "ops.py:10 passes 1 operand" in f.evidence for f in found)


def test_the_same_holds_for_a_name_built_with_format_or_concatenation():
    for called in ('"op_{}".format(kind)', '"op_" + kind'):
        assert len(buffer_order(("ops.cu", KERNEL), ("ops.py", PYTHON.replace("CALLED", called)))) == 2, called


def test_a_pattern_call_meant_for_another_entry_point_blames_none():
    # gpu_add fits the two-operand call; the three-operand call, of the same pattern, is the CPU twin's
    kernel = """extern "C" void gpu_add(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  const float* a = static_cast<const float*>(buffers[0]);
  const float* b = static_cast<const float*>(buffers[1]);
  float* out = static_cast<float*>(buffers[2]);
  add_kernel<<<1, 1, 0, stream>>>(a, b, out);
}
__global__ void add_kernel(const float* a, const float* b, float* out) { out[0] = a[0] + b[0]; }
"""
    python = """import ctypes
import jax

lib = ctypes.CDLL("./libadd.so")
jax.ffi.register_ffi_target("gpu_add", jax.ffi.pycapsule(lib.gpu_add), platform="CUDA", api_version=0)


def add(platform, n, a, b):
    if platform == "cpu":
        return jax.ffi.ffi_call(platform + "_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(n, a, b)
    return jax.ffi.ffi_call(platform + "_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)
"""
    assert buffer_order(("add.cu", kernel), ("add.py", python)) == []
    alone = python.replace("        return jax.ffi.ffi_call(platform + \"_add\", jax.ShapeDtypeStruct(a.shape, a.dtype))(n, a, b)\n", "        pass\n")
    assert buffer_order(("add.cu", kernel), ("add.py", alone.replace("(a, b)\n", "(n, a, b)\n"))) != []


def test_an_entry_point_reading_by_name_what_the_caller_passes_in_another_order():
    kernel = """extern "C" void cache(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  const float* key = static_cast<const float*>(buffers[0]);
  const float* value = static_cast<const float*>(buffers[1]);
  float* key_cache = static_cast<float*>(buffers[2]);
  copy_kernel<<<1, 1, 0, stream>>>(key, value, key_cache);
}
__global__ void copy_kernel(const float* k, const float* v, float* out) { out[0] = k[0] + v[0]; }
"""
    python = """import torch_xla
torch_xla._XLAC._xla_register_custom_call_target("cache", capsule, "CUDA")


def run(key, value, key_cache):
    operands = [value, key]
    return torch_xla._XLAC._xla_custom_call(operands, "cache", [list(key_cache.shape)], [key_cache.dtype], True, b"", 1, {})
"""
    (found,) = buffer_order(("cache.cu", kernel), ("cache.py", python))
    assert "takes its buffers in another order than cache.py:7 passes them ([value, key])" in found.evidence
    assert "`key` is buffers[0] there but operand 1 here" in found.evidence


def test_a_typed_handler_whose_operands_the_caller_swaps():
    handler = """#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;
ffi::Error AxpyImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y, ffi::ResultBuffer<ffi::F32> out, float alpha) {
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Axpy, AxpyImpl, ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>().Attr<float>("alpha"));
"""
    python = """import ctypes
import jax

lib = ctypes.CDLL("./libaxpy.so")
jax.ffi.register_ffi_target("axpy", jax.ffi.pycapsule(lib.Axpy), platform="cpu")


def axpy(alpha, x, y, swapped):
    return jax.ffi.ffi_call("axpy", jax.ShapeDtypeStruct(x.shape, x.dtype))(OPERANDS, alpha=alpha)
"""
    (found,) = buffer_order(("axpy.cc", handler), ("axpy.py", python.replace("OPERANDS", "y, x")))
    assert "`x` is operand 0 of AxpyImpl there but operand 1 here" in found.evidence
    assert buffer_order(("axpy.cc", handler), ("axpy.py", python.replace("OPERANDS", "x, y"))) == []
    assert buffer_order(("axpy.cc", handler), ("axpy.py", python.replace("OPERANDS", "y, b"))) == []  # one name alone proves nothing
