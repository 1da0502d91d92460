// xlacc_torch_compat.h: the part of PyTorch's C++ API a CUDA extension's launcher uses, over the
// buffers XLA gives a custom call, so that a launcher taking `torch::Tensor` compiles unchanged
// and without libtorch. Written by xlacc from PyTorch's documented C++ API; `xlacc build` puts
// this folder in front of any real torch headers for a project that wraps such a launcher
// (`xlacc new --from FILE`), and the shims beside it (torch/all.h, ATen/ATen.h, ...) include it.
//
// What it gives:
//   - at::Tensor (torch::Tensor): a view of one XLA buffer: data_ptr<T>(), data_ptr(), size(i),
//     sizes(), stride(i), strides(), numel(), dim(), scalar_type(), dtype(), options(),
//     is_contiguous(), element_size(), device(), is_cuda(). XLA's buffers are dense and row-major.
//   - TORCH_CHECK and friends throw xlacc::torch_compat::Error; the generated launch code catches
//     it and returns its message to XLA as the call's error.
//   - at::cuda::getCurrentCUDAStream() is the stream XLA gives the call (set by the launch code);
//     device guards do nothing (XLA already runs the call on its device).
//   - AT_DISPATCH_* over the dtypes below; c10::Half / c10::BFloat16 are CUDA's __half and
//     __nv_bfloat16 under nvcc (xlacc's 16-bit floats for XLA:CPU).
//   - dense views: view(), reshape(), flatten(), and select() / narrow() / [] on the first dim.
// What it does not give (xlacc refuses a launcher that uses it, naming the line; elsewhere in the
// file it compiles, and fails the call if reached): allocation (torch::empty, at::empty_like,
// .clone()), .to(), .item(), strided views (transpose, permute, expand...).
#pragma once

#include <xlacc/kernel.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifndef __CUDACC__
// A launcher for XLA:CPU may still name CUDA's stream type (it reads the "current stream"); the
// same declaration as CUDA's own, so that a later <cuda_runtime.h> agrees with it.
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
#endif

namespace c10 {

#ifdef __CUDACC__
using Half = __half;
using BFloat16 = __nv_bfloat16;
#else
using Half = ::xlacc::f16_t;
using BFloat16 = ::xlacc::bf16_t;
#endif

enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16, Float8_e4m3fn, Float8_e5m2, Undefined };

constexpr ScalarType kByte = ScalarType::Byte, kChar = ScalarType::Char, kShort = ScalarType::Short, kInt = ScalarType::Int,
                     kLong = ScalarType::Long, kHalf = ScalarType::Half, kFloat = ScalarType::Float, kDouble = ScalarType::Double,
                     kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16, kFloat8_e4m3fn = ScalarType::Float8_e4m3fn,
                     kFloat8_e5m2 = ScalarType::Float8_e5m2, kUInt8 = kByte, kInt8 = kChar, kInt16 = kShort, kInt32 = kInt, kInt64 = kLong,
                     kFloat16 = kHalf, kFloat32 = kFloat, kFloat64 = kDouble;

inline const char* toString(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float";
    case ScalarType::Double: return "Double";
    case ScalarType::Bool: return "Bool";
    case ScalarType::BFloat16: return "BFloat16";
    case ScalarType::Float8_e4m3fn: return "Float8_e4m3fn";
    case ScalarType::Float8_e5m2: return "Float8_e5m2";
    default: return "Undefined";
  }
}
inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << toString(t); }

inline size_t elementSize(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: case ScalarType::Float8_e4m3fn: case ScalarType::Float8_e5m2: return 1;
    case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
    case ScalarType::Int: case ScalarType::Float: return 4;
    case ScalarType::Long: case ScalarType::Double: return 8;
    default: return 0;
  }
}
inline bool isFloatingType(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::BFloat16 ||
         t == ScalarType::Float8_e4m3fn || t == ScalarType::Float8_e5m2;
}
inline bool isReducedFloatingType(ScalarType t) { return t == ScalarType::Half || t == ScalarType::BFloat16; }

// The C++ type of each dtype (AT_DISPATCH's scalar_t) and back.
template <ScalarType S> struct CppTypeOf;
template <> struct CppTypeOf<ScalarType::Byte> { using type = uint8_t; };
template <> struct CppTypeOf<ScalarType::Char> { using type = int8_t; };
template <> struct CppTypeOf<ScalarType::Short> { using type = int16_t; };
template <> struct CppTypeOf<ScalarType::Int> { using type = int32_t; };
template <> struct CppTypeOf<ScalarType::Long> { using type = int64_t; };
template <> struct CppTypeOf<ScalarType::Half> { using type = Half; };
template <> struct CppTypeOf<ScalarType::Float> { using type = float; };
template <> struct CppTypeOf<ScalarType::Double> { using type = double; };
template <> struct CppTypeOf<ScalarType::Bool> { using type = bool; };
template <> struct CppTypeOf<ScalarType::BFloat16> { using type = BFloat16; };
template <ScalarType S> using cpp_type_t = typename CppTypeOf<S>::type;

// The dtype a `data_ptr<T>()` names; Undefined for a type PyTorch has no dtype for (no check then).
template <typename T> constexpr ScalarType scalar_type_for() { return ScalarType::Undefined; }
template <> constexpr ScalarType scalar_type_for<uint8_t>() { return ScalarType::Byte; }
template <> constexpr ScalarType scalar_type_for<int8_t>() { return ScalarType::Char; }
template <> constexpr ScalarType scalar_type_for<int16_t>() { return ScalarType::Short; }
template <> constexpr ScalarType scalar_type_for<int32_t>() { return ScalarType::Int; }
template <> constexpr ScalarType scalar_type_for<int64_t>() { return ScalarType::Long; }
template <> constexpr ScalarType scalar_type_for<Half>() { return ScalarType::Half; }
template <> constexpr ScalarType scalar_type_for<float>() { return ScalarType::Float; }
template <> constexpr ScalarType scalar_type_for<double>() { return ScalarType::Double; }
template <> constexpr ScalarType scalar_type_for<bool>() { return ScalarType::Bool; }
template <> constexpr ScalarType scalar_type_for<BFloat16>() { return ScalarType::BFloat16; }

// tensor.dtype(): compares with a ScalarType either way round and converts to one.
struct TypeMeta {
  ScalarType type = ScalarType::Undefined;
  constexpr TypeMeta() = default;
  constexpr TypeMeta(ScalarType t) : type(t) {}
  constexpr operator ScalarType() const { return type; }
  constexpr ScalarType toScalarType() const { return type; }
  size_t itemsize() const { return elementSize(type); }
  const char* name() const { return toString(type); }
};
constexpr bool operator==(TypeMeta a, TypeMeta b) { return a.type == b.type; }
constexpr bool operator!=(TypeMeta a, TypeMeta b) { return a.type != b.type; }
constexpr bool operator==(TypeMeta a, ScalarType b) { return a.type == b; }
constexpr bool operator!=(TypeMeta a, ScalarType b) { return a.type != b; }
constexpr bool operator==(ScalarType a, TypeMeta b) { return a == b.type; }
constexpr bool operator!=(ScalarType a, TypeMeta b) { return a != b.type; }
inline std::ostream& operator<<(std::ostream& os, TypeMeta t) { return os << toString(t.type); }
inline ScalarType typeMetaToScalarType(TypeMeta t) { return t.type; }

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = -1;
  Device() = default;
  Device(DeviceType type, int index = -1) : type_(type), index_(static_cast<int8_t>(index)) {}
  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  std::string str() const { return is_cuda() ? "cuda:" + std::to_string(index_) : "cpu"; }
};
inline bool operator==(const Device& a, const Device& b) { return a.type_ == b.type_ && a.index_ == b.index_; }
inline bool operator!=(const Device& a, const Device& b) { return !(a == b); }
inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
using DeviceIndex = int8_t;

// sizes() and strides(): a view of a tensor's own arrays (valid while the tensor lives).
class IntArrayRef {
 public:
  IntArrayRef() = default;
  IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
  // `{n, m}` in a call, as PyTorch's: the list lives until the end of the call's full expression.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  IntArrayRef(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return data_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool equals(IntArrayRef other) const { return size_ == other.size_ && std::equal(begin(), end(), other.begin()); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};
inline bool operator==(IntArrayRef a, IntArrayRef b) { return a.equals(b); }
inline bool operator!=(IntArrayRef a, IntArrayRef b) { return !a.equals(b); }
inline std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << "[";
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << "]";
}

struct TensorOptions {
  ScalarType dtype_ = ScalarType::Undefined;
  Device device_;
  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }
  TypeMeta dtype() const { return dtype_; }
  Device device() const { return device_; }
};

template <typename T> using optional = std::optional<T>;
using std::nullopt;
using std::nullopt_t;

}  // namespace c10

namespace xlacc {
namespace torch_compat {

// What TORCH_CHECK throws: the generated launch code returns its text to XLA as the call's error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream text;
  (void)std::initializer_list<int>{((text << parts), 0)...};
  return text.str();
}

template <typename... Parts>
[[noreturn]] void check_failed(const char* condition, const char* file, int line, const Parts&... parts) {
  std::string message = concat(parts...);
  if (message.empty()) message = concat("Expected ", condition, " to be true, but got false.");
  throw Error(concat(message, " (", file, ":", line, ")"));
}

// The stream XLA gives the call, for at::cuda::getCurrentCUDAStream(): the launch code sets it
// around the call on the calling thread.
inline void*& current_stream() {
  thread_local void* stream = nullptr;
  return stream;
}

}  // namespace torch_compat
}  // namespace xlacc

namespace at {

using c10::BFloat16;
using c10::Device;
using c10::DeviceType;
using c10::Half;
using c10::IntArrayRef;
using c10::kBFloat16;
using c10::kBool;
using c10::kByte;
using c10::kChar;
using c10::kCPU;
using c10::kCUDA;
using c10::kDouble;
using c10::kFloat;
using c10::kFloat16;
using c10::kFloat32;
using c10::kFloat64;
using c10::kFloat8_e4m3fn;
using c10::kFloat8_e5m2;
using c10::kHalf;
using c10::kInt;
using c10::kInt16;
using c10::kInt32;
using c10::kInt64;
using c10::kInt8;
using c10::kLong;
using c10::kShort;
using c10::kUInt8;
using c10::ScalarType;
using c10::TensorOptions;
using c10::toString;
using c10::TypeMeta;
using c10::optional;
using c10::nullopt;
using c10::elementSize;
using c10::isFloatingType;
using c10::isReducedFloatingType;

class Tensor {
 public:
  static constexpr int kMaxDims = 8;
  Tensor() = default;
  Tensor(void* data, ScalarType dtype, IntArrayRef sizes, Device device) : data_(data), dtype_(dtype), dim_(static_cast<int>(sizes.size())), device_(device) {
    int64_t stride = 1;
    for (int i = dim_ - 1; i >= 0; --i) {
      sizes_[i] = sizes[i];
      strides_[i] = stride;
      stride *= sizes[i] > 1 ? sizes[i] : 1;
    }
  }

  bool defined() const { return dtype_ != ScalarType::Undefined; }
  void* data_ptr() const { return data_; }
  const void* const_data_ptr() const { return data_; }
  void* mutable_data_ptr() const { return data_; }
  template <typename T>
  T* data_ptr() const {
    constexpr ScalarType wanted = c10::scalar_type_for<T>();
    if (wanted != ScalarType::Undefined && wanted != dtype_) {
      throw ::xlacc::torch_compat::Error(::xlacc::torch_compat::concat("expected scalar type ", c10::toString(wanted), " but found ", c10::toString(dtype_)));
    }
    return static_cast<T*>(data_);
  }
  template <typename T> const T* const_data_ptr() const { return data_ptr<T>(); }
  template <typename T> T* mutable_data_ptr() const { return data_ptr<T>(); }

  int64_t dim() const { return dim_; }
  int64_t ndimension() const { return dim_; }
  int64_t size(int64_t d) const { return sizes_[wrap(d)]; }
  int64_t stride(int64_t d) const { return strides_[wrap(d)]; }
  IntArrayRef sizes() const { return IntArrayRef(sizes_, static_cast<size_t>(dim_)); }
  IntArrayRef strides() const { return IntArrayRef(strides_, static_cast<size_t>(dim_)); }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < dim_; ++i) n *= sizes_[i];
    return n;
  }
  ScalarType scalar_type() const { return dtype_; }
  TypeMeta dtype() const { return dtype_; }
  int64_t element_size() const { return static_cast<int64_t>(elementSize(dtype_)); }
  size_t itemsize() const { return elementSize(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  bool is_contiguous() const { return true; }  // XLA's buffers are dense, row-major
  const Tensor& contiguous() const { return *this; }
  Device device() const { return device_; }
  int64_t get_device() const { return device_.index(); }
  bool is_cuda() const { return device_.is_cuda(); }
  bool is_cpu() const { return device_.is_cpu(); }
  TensorOptions options() const { return TensorOptions{}.dtype(dtype_).device(device_); }

  // Views of a dense buffer: the same data with other sizes, or one part of its first dim.
  Tensor view(IntArrayRef sizes) const { return reshaped(sizes); }
  Tensor reshape(IntArrayRef sizes) const { return reshaped(sizes); }
  Tensor flatten(int64_t start = 0, int64_t end = -1) const {
    const int first = wrap(start), last = wrap(end);
    int64_t sizes[kMaxDims], n = 0;
    for (int i = 0; i < dim_; ++i) {
      if (i <= first || i > last) sizes[n++] = sizes_[i];
      else sizes[n - 1] *= sizes_[i];
    }
    return reshaped(IntArrayRef(sizes, static_cast<size_t>(n)));
  }
  Tensor select(int64_t d, int64_t index) const {
    refuse_unless(wrap(d) == 0, "select() on a dim other than the first");
    const int64_t i = index < 0 ? index + sizes_[0] : index;
    return Tensor(static_cast<char*>(data_) + i * strides_[0] * element_size(), dtype_, IntArrayRef(sizes_ + 1, static_cast<size_t>(dim_ - 1)), device_);
  }
  Tensor narrow(int64_t d, int64_t start, int64_t length) const {
    refuse_unless(wrap(d) == 0, "narrow() on a dim other than the first");
    int64_t sizes[kMaxDims];
    std::copy(sizes_, sizes_ + dim_, sizes);
    sizes[0] = length;
    return Tensor(static_cast<char*>(data_) + start * strides_[0] * element_size(), dtype_, IntArrayRef(sizes, static_cast<size_t>(dim_)), device_);
  }
  Tensor operator[](int64_t index) const { return select(0, index); }

  // What a custom call cannot do (allocate, copy to another device, read a device value on the
  // host): declared so that the other functions of a launcher's file compile; `xlacc new --from`
  // refuses a wrapped launcher that calls one, naming the line, and any other call fails the op.
  template <typename... Any> Tensor to(Any&&...) const { refuse(".to()"); }
  template <typename... Any> Tensor cpu(Any&&...) const { refuse(".cpu()"); }
  template <typename... Any> Tensor cuda(Any&&...) const { refuse(".cuda()"); }
  template <typename... Any> Tensor clone(Any&&...) const { refuse(".clone()"); }
  template <typename... Any> Tensor copy_(Any&&...) const { refuse(".copy_()"); }
  template <typename... Any> Tensor fill_(Any&&...) const { refuse(".fill_()"); }
  template <typename... Any> Tensor zero_(Any&&...) const { refuse(".zero_()"); }
  template <typename T = double> T item() const { refuse(".item()"); }

 private:
  [[noreturn]] static void refuse(const char* what) {
    throw ::xlacc::torch_compat::Error(std::string(what) + " is not available to a launcher run as an XLA custom call (xlacc_torch_compat.h)");
  }
  static void refuse_unless(bool ok, const char* what) {
    if (!ok) refuse(what);
  }
  Tensor reshaped(IntArrayRef sizes) const {
    int64_t n = 1, known[kMaxDims];
    int infer = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      known[i] = sizes[i];
      if (sizes[i] == -1) infer = static_cast<int>(i);
      else n *= sizes[i];
    }
    if (infer >= 0) known[infer] = n ? numel() / n : 0;
    return Tensor(data_, dtype_, IntArrayRef(known, sizes.size()), device_);
  }

  int wrap(int64_t d) const {
    const int64_t wrapped = d < 0 ? d + dim_ : d;
    if (wrapped < 0 || wrapped >= dim_) {
      throw ::xlacc::torch_compat::Error(::xlacc::torch_compat::concat("Dimension out of range (expected to be in range of [", -dim_, ", ", dim_ - 1, "], but got ", d, ")"));
    }
    return static_cast<int>(wrapped);
  }

  void* data_ = nullptr;
  ScalarType dtype_ = ScalarType::Undefined;
  int dim_ = 0;
  int64_t sizes_[kMaxDims] = {};
  int64_t strides_[kMaxDims] = {};
  Device device_;
};

inline std::optional<Device> device_of(const Tensor& t) { return t.device(); }
inline std::optional<Device> device_of(const std::optional<Tensor>& t) { return t ? std::optional<Device>(t->device()) : std::nullopt; }

// Device guards: XLA runs the call on its own device already.
struct DeviceGuard {
  template <typename... Any> explicit DeviceGuard(Any&&...) {}
};
struct OptionalDeviceGuard {
  template <typename... Any> explicit OptionalDeviceGuard(Any&&...) {}
};

namespace cuda {
struct CUDAStream {
  cudaStream_t stream() const { return static_cast<cudaStream_t>(::xlacc::torch_compat::current_stream()); }
  operator cudaStream_t() const { return stream(); }
  Device device() const { return Device(DeviceType::CUDA, 0); }
  c10::DeviceIndex device_index() const { return 0; }
};
inline CUDAStream getCurrentCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getDefaultCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline c10::DeviceIndex current_device() { return 0; }
struct CUDAGuard {
  template <typename... Any> explicit CUDAGuard(Any&&...) {}
};
struct OptionalCUDAGuard {
  template <typename... Any> explicit OptionalCUDAGuard(Any&&...) {}
};
struct CUDAStreamGuard {
  template <typename... Any> explicit CUDAStreamGuard(Any&&...) {}
};
}  // namespace cuda

namespace detail {
inline ScalarType scalar_type(ScalarType t) { return t; }
inline ScalarType scalar_type(TypeMeta t) { return t.type; }
}  // namespace detail

}  // namespace at

namespace c10 {
using at::Tensor;
namespace cuda {
using at::cuda::CUDAGuard;
using at::cuda::CUDAStream;
using at::cuda::CUDAStreamGuard;
using at::cuda::getCurrentCUDAStream;
using at::cuda::getDefaultCUDAStream;
using at::cuda::OptionalCUDAGuard;
using at::cuda::current_device;
}  // namespace cuda
}  // namespace c10

namespace at {
// Allocation, which a custom call cannot do: declared so that a launcher's file compiles; see Tensor::to.
#define XLACC_TORCH_REFUSED(name)                                                                                  \
  template <typename... Any>                                                                                       \
  [[noreturn]] Tensor name(Any&&...) {                                                                             \
    throw ::xlacc::torch_compat::Error(#name "() allocates, which a launcher run as an XLA custom call cannot"); \
  }
XLACC_TORCH_REFUSED(empty)
XLACC_TORCH_REFUSED(zeros)
XLACC_TORCH_REFUSED(ones)
XLACC_TORCH_REFUSED(full)
XLACC_TORCH_REFUSED(empty_like)
XLACC_TORCH_REFUSED(zeros_like)
XLACC_TORCH_REFUSED(ones_like)
XLACC_TORCH_REFUSED(full_like)
XLACC_TORCH_REFUSED(empty_strided)
XLACC_TORCH_REFUSED(arange)
#undef XLACC_TORCH_REFUSED
// A tensor over memory the caller owns (host memory in the launchers seen): a view, on the CPU.
inline Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype) { return Tensor(data, dtype, sizes, Device(DeviceType::CPU)); }
inline Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options) { return Tensor(data, options.dtype_, sizes, Device(DeviceType::CPU)); }
}  // namespace at

namespace torch {
using at::arange;
using at::empty;
using at::empty_like;
using at::empty_strided;
using at::from_blob;
using at::full;
using at::full_like;
using at::ones;
using at::ones_like;
using at::zeros;
using at::zeros_like;
using at::BFloat16;
using at::Device;
using at::Half;
using at::IntArrayRef;
using at::kBFloat16;
using at::kBool;
using at::kByte;
using at::kChar;
using at::kCPU;
using at::kCUDA;
using at::kDouble;
using at::kFloat;
using at::kFloat16;
using at::kFloat32;
using at::kFloat64;
using at::kHalf;
using at::kInt;
using at::kInt16;
using at::kInt32;
using at::kInt64;
using at::kInt8;
using at::kLong;
using at::kShort;
using at::kUInt8;
using at::ScalarType;
using at::Tensor;
using at::TensorOptions;
using Dtype = at::ScalarType;
template <typename T> using optional = std::optional<T>;
}  // namespace torch

#include "xlacc_torch_macros.h"  // TORCH_CHECK, AT_DISPATCH_*, PYBIND11_MODULE / TORCH_LIBRARY
#include "xlacc_torch_launch.h"  // what xlacc's generated launch code uses
