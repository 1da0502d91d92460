// xlacc/kernel.h: what a kernel file of an xlacc project uses. Shipped with xlacc (`xlacc build`
// puts it on the include path, as jax ships XLA's FFI headers); the same file for CUDA (nvcc) and
// for XLA:CPU (a host compiler).
//
// A project's kernel file defines its launch function, which the generated entry points call
// with the op's element type T chosen at call time:
//
//   template <typename T>
//   xlacc::Status NAME_launch(xlacc::Stream stream, const xlacc::Tensor& input..., const xlacc::Tensor& output...,
//                             attribute...);
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

namespace xlacc {

#ifdef __CUDACC__
using Stream = cudaStream_t;
#define XLACC_HD __host__ __device__ __forceinline__
#else
using Stream = std::nullptr_t;  // XLA:CPU runs the handler on the calling thread: no stream
#define XLACC_HD inline
#endif

enum class DType { F16, BF16, F32, F64, S32, S64, Unknown };

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::S32: return "i32";
    case DType::S64: return "i64";
    default: return "unsupported";
  }
}

// The outcome of a launch: an empty message is success.
struct Status {
  bool invalid_argument = false;
  std::string message;
  bool ok() const { return message.empty(); }
  static Status Ok() { return {}; }
  static Status Invalid(std::string m) { return {true, std::move(m)}; }
  static Status Internal(std::string m) { return {false, std::move(m)}; }
};

// A buffer and its shape, whichever entry point XLA called.
struct Tensor {
  static constexpr int kMaxRank = 8;
  void* ptr = nullptr;
  DType dtype = DType::Unknown;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  int64_t dim(int i) const { return dims[i < 0 ? rank + i : i]; }
  template <typename T>
  T* data() const { return static_cast<T*>(ptr); }
};

// "[2, 3, 4]": a tensor's shape for error messages.
inline std::string shape_text(const Tensor& t) {
  std::string text = "[";
  for (int i = 0; i < t.rank; ++i) text += (i ? ", " : "") + std::to_string(t.dims[i]);
  return text + "]";
}

inline bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

#ifdef __CUDACC__
using f16_t = __half;
using bf16_t = __nv_bfloat16;
#else
// Hand-written because the host compilers xlacc supports disagree on _Float16 and __bf16: IEEE
// half and bfloat16 conversions with round-to-nearest-even, subnormals and NaN.
inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, f;
  if (exp == 0x1f) f = sign | 0x7f800000u | (man << 13);
  else if (exp != 0) f = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) f = sign;
  else {  // subnormal half -> normal float
    int e = -1;
    do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
    f = sign | ((112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}
inline uint16_t float_to_half(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  uint32_t sign = (f >> 16) & 0x8000u, exp = (f >> 23) & 0xff, man = f & 0x7fffffu;
  if (exp == 0xff) return sign | 0x7c00u | (man ? 0x200u : 0);
  int e = int(exp) - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00u;
  if (e <= 0) {
    if (e < -10) return sign;
    man |= 0x800000u;
    uint32_t shift = 14 - e, half_man = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half_man & 1))) ++half_man;
    return sign | half_man;
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (man >> 13), rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // round to nearest even
  return half;
}
inline float bf16_to_float(uint16_t b) {
  uint32_t f = uint32_t(b) << 16;
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}
inline uint16_t float_to_bf16(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x40u);  // quiet NaN
  f += 0x7fffu + ((f >> 16) & 1);  // round to nearest even
  return uint16_t(f >> 16);
}
// 16-bit floats on the host: stored as bits, computed in float (portable across host compilers).
// They convert to and from float implicitly, as CUDA's __half and __nv_bfloat16 do, so a kernel
// written for those (`(float)x`, `(scalar_t)(y)`, `float v = x;`) compiles for XLA:CPU unchanged.
struct f16_t {
  uint16_t bits;
  f16_t() = default;
  f16_t(float v) : bits(float_to_half(v)) {}
  operator float() const { return half_to_float(bits); }
};
struct bf16_t {
  uint16_t bits;
  bf16_t() = default;
  bf16_t(float v) : bits(float_to_bf16(v)) {}
  operator float() const { return bf16_to_float(bits); }
};
#endif

// The type arithmetic on T accumulates in (float for 16-bit floats), and the conversions.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<f16_t> { using type = float; };
template <> struct Acc<bf16_t> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;
template <typename T> XLACC_HD acc_t<T> to_acc(T v) { return v; }
template <typename T> XLACC_HD T from_acc(acc_t<T> v) { return static_cast<T>(v); }
#ifdef __CUDACC__
template <> XLACC_HD float to_acc<__half>(__half v) { return __half2float(v); }
template <> XLACC_HD float to_acc<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> XLACC_HD __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> XLACC_HD __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
#else
template <> inline float to_acc<f16_t>(f16_t v) { return half_to_float(v.bits); }
template <> inline float to_acc<bf16_t>(bf16_t v) { return bf16_to_float(v.bits); }
template <> inline f16_t from_acc<f16_t>(float v) { return f16_t(v); }
template <> inline bf16_t from_acc<bf16_t>(float v) { return bf16_t(v); }
#endif

#ifdef __CUDACC__
// Programmatic dependent launch (Hopper and newer): the GPU may start launching a small kernel
// while the one before it on the stream finishes, so back-to-back small calls do not pay a full
// launch gap each (2.0 -> 1.1 us per dependent 1024-element add on an H200). Large grids launch
// plainly: their blocks waiting early would take SM slots from the kernel they wait for (0.91x
// XLA's add at 64M elements). A kernel launched through here must call wait_for_inputs() before it
// reads anything; on older GPUs the attribute is ignored and wait_for_inputs() compiles to nothing.
constexpr unsigned kLatencyBoundBlocks = 1024;

template <typename... Params, typename... Args>
inline cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = grid.x * grid.y * grid.z <= kLatencyBoundBlocks;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

// Waits until the kernels this one depends on have finished and their writes are visible, then
// lets the next kernel begin launching.
__device__ __forceinline__ void wait_for_inputs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Call right after a launch: a launch that did not start (no kernel image for this GPU, too many
// threads, a bad stream) must fail the call, not leave zeros behind.
inline Status launch_status(const char* kernel, cudaError_t launched = cudaSuccess) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = launched;
  if (err == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string("launch of ") + kernel + " failed: " + cudaGetErrorString(err));
}
#endif

}  // namespace xlacc
