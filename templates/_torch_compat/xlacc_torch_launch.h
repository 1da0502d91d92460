// xlacc_torch_launch.h: how xlacc's generated launch code runs a PyTorch launcher over the buffers
// XLA gives a custom call (included by xlacc_torch_compat.h).
#pragma once

#include "xlacc_torch_compat.h"

// ---- what xlacc's generated launch code uses ---------------------------------------------------------------
namespace xlacc {
namespace torch_compat {

inline c10::ScalarType scalar_type_of(DType d) {
  switch (d) {
    case DType::F16: return c10::ScalarType::Half;
    case DType::BF16: return c10::ScalarType::BFloat16;
    case DType::F32: return c10::ScalarType::Float;
    case DType::F64: return c10::ScalarType::Double;
    case DType::S32: return c10::ScalarType::Int;
    case DType::S64: return c10::ScalarType::Long;
    default: return c10::ScalarType::Undefined;
  }
}

// A torch::Tensor over the buffer XLA gave the call.
inline at::Tensor view(const Tensor& t) {
#ifdef __CUDACC__
  const c10::Device device(c10::DeviceType::CUDA, 0);
#else
  const c10::Device device(c10::DeviceType::CPU);
#endif
  return at::Tensor(t.ptr, scalar_type_of(t.dtype), c10::IntArrayRef(t.dims, static_cast<size_t>(t.rank)), device);
}

// A tensor the launcher writes in place, seen through the result that aliases it: XLA passes one
// buffer for both when it honours the alias; otherwise the result starts as a copy of the input.
inline at::Tensor in_place(Stream stream, const Tensor& input, const Tensor& result) {
  at::Tensor out = view(result);
  if (input.ptr != result.ptr && out.nbytes() != 0) {
#ifdef __CUDACC__
    const cudaError_t err = cudaMemcpyAsync(result.ptr, input.ptr, out.nbytes(), cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) throw Error(std::string("copying the input of an in-place result failed: ") + cudaGetErrorString(err));
#else
    (void)stream;
    std::memcpy(result.ptr, input.ptr, out.nbytes());
#endif
  }
  return out;
}

// Runs the launcher with the call's stream as PyTorch's current stream; a failed TORCH_CHECK (or any
// exception) becomes the call's error instead of crossing into XLA.
template <typename Launcher>
Status call(const char* name, Stream stream, Launcher&& launcher) {
  void*& current = current_stream();
  void* const before = current;
  current = static_cast<void*>(stream);
  Status status;
  try {
    launcher();
  } catch (const Error& e) {
    status = Status::Invalid(std::string(name) + ": " + e.what());
  } catch (const std::exception& e) {
    status = Status::Internal(std::string(name) + " threw: " + e.what());
  }
  current = before;
#ifdef __CUDACC__
  if (status.ok()) status = launch_status(name);
#endif
  return status;
}

}  // namespace torch_compat
}  // namespace xlacc
