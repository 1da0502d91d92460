// Modelled on AMD-AGI/Primus-Turbo csrc/jax/quantization/quantization.cpp (MIT); rewritten, not copied: see SOURCE.md.
// FP8 quantisation handlers: the input and output dtypes are picked at run time through the dtype
// switch macros of utils.h, whose default branch throws.
#include "jax/extensions.h"
#include "jax/ffi.h"
#include "jax/utils.h"
#include "primus_turbo/quantization.h"
#include "primus_turbo/reduce.h"

namespace primus_turbo::jax {

using namespace primus_turbo::dtype;

__global__ void reciprocal_kernel(const float* scale, float* scale_inv, int64_t n) {
  int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scale_inv[i] = 1.0f / scale[i];
}

inline void compute_scale_inv_gpu(const float* scale, float* scale_inv, int64_t n, hipStream_t stream) {
  constexpr int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  hipLaunchKernelGGL(reciprocal_kernel, dim3(blocks), dim3(threads), 0, stream, scale, scale_inv, n);
}

ffi::Error QuantizeFP8TensorwiseFFI(hipStream_t stream, ffi::AnyBuffer input, ffi::Buffer<ffi::DataType::F32> scale_opt,
                                    ffi::Result<ffi::AnyBuffer> output,
                                    ffi::Result<ffi::Buffer<ffi::DataType::F32>> scale_inv_out,
                                    ffi::Result<ffi::AnyBuffer> workspace) {
  const int64_t n = input.element_count();
  float* scale_inv = scale_inv_out->typed_data();
  if (scale_opt.element_count() > 0) {
    const float* scale = scale_opt.typed_data();
    compute_scale_inv_gpu(scale, scale_inv, 1, stream);
    FFI_TYPE_SWITCH_FP16_BF16_FP32(input.element_type(), FType, {
      FFI_TYPE_SWITCH_FP8(output->element_type(), QType, {
        quantize_tensorwise_impl<FType, QType>(reinterpret_cast<const FType*>(input.untyped_data()), scale,
                                               reinterpret_cast<QType*>(output->untyped_data()), n, stream);
      });
    });
  } else {
    float* amax = reinterpret_cast<float*>(workspace->untyped_data());
    float* scale = amax + 1;
    FFI_TYPE_SWITCH_FP16_BF16_FP32(input.element_type(), InT, {
      reduce_abs_max<InT>(input.typed_data<InT>(), amax, n, stream);
    });
    compute_scale_from_amax<float>(amax, get_float8_max(output->element_type()), scale, scale_inv, 1, stream);
    FFI_TYPE_SWITCH_FP16_BF16_FP32(input.element_type(), FType, {
      FFI_TYPE_SWITCH_FP8(output->element_type(), QType, {
        quantize_tensorwise_impl<FType, QType>(reinterpret_cast<const FType*>(input.untyped_data()), scale,
                                               reinterpret_cast<QType*>(output->untyped_data()), n, stream);
      });
    });
  }
  return ffi::Error::Success();
}

ffi::Error DequantizeFP8TensorwiseFFI(hipStream_t stream, ffi::AnyBuffer input, ffi::Buffer<ffi::DataType::F32> scale_inv,
                                      ffi::Result<ffi::AnyBuffer> output) {
  FFI_TYPE_SWITCH_FP16_BF16_FP32(output->element_type(), FType, {
    FFI_TYPE_SWITCH_FP8(input.element_type(), QType, {
      dequantize_tensorwise_impl<FType, QType>(reinterpret_cast<const QType*>(input.untyped_data()),
                                               scale_inv.typed_data(),
                                               reinterpret_cast<FType*>(output->untyped_data()),
                                               input.element_count(), stream);
    });
  });
  return ffi::Error::Success();
}

ffi::Error QuantizeFP8RowwiseFFI(hipStream_t stream, ffi::AnyBuffer input, int64_t axis,
                                 ffi::Buffer<ffi::DataType::F32> scale_opt, ffi::Result<ffi::AnyBuffer> output,
                                 ffi::Result<ffi::Buffer<ffi::DataType::F32>> scale_inv_out,
                                 ffi::Result<ffi::AnyBuffer> workspace) {
  auto dims = input.dimensions();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t valid_axis = axis >= 0 ? axis : rank + axis;
  if (valid_axis < 0 || valid_axis >= rank) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "axis out of range for rowwise quantisation");
  }
  const int64_t inner = dims[valid_axis];
  const int64_t outer = input.element_count() / inner;
  float* scale = scale_opt.element_count() > 0 ? const_cast<float*>(scale_opt.typed_data())
                                               : reinterpret_cast<float*>(workspace->untyped_data());
  if (scale_opt.element_count() > 0) {
    compute_scale_inv_gpu(scale, scale_inv_out->typed_data(), scale_opt.element_count(), stream);
  }
  FFI_TYPE_SWITCH_FP16_BF16_FP32(input.element_type(), FType, {
    FFI_TYPE_SWITCH_FP8(output->element_type(), QType, {
      quantize_rowwise_impl<FType, QType>(reinterpret_cast<const FType*>(input.untyped_data()), scale,
                                          scale_inv_out->typed_data(), reinterpret_cast<QType*>(output->untyped_data()),
                                          outer, inner, scale_opt.element_count() > 0, stream);
    });
  });
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(QuantizeFP8TensorwiseHandler, QuantizeFP8TensorwiseFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<hipStream_t>>()
                                  .Arg<ffi::AnyBuffer>()                   // input
                                  .Arg<ffi::Buffer<ffi::DataType::F32>>()  // scale (may be empty)
                                  .Ret<ffi::AnyBuffer>()                   // output
                                  .Ret<ffi::Buffer<ffi::DataType::F32>>()  // scale_inv
                                  .Ret<ffi::AnyBuffer>());                 // workspace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DequantizeFP8TensorwiseHandler, DequantizeFP8TensorwiseFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<hipStream_t>>()
                                  .Arg<ffi::AnyBuffer>()                   // input
                                  .Arg<ffi::Buffer<ffi::DataType::F32>>()  // scale_inv
                                  .Ret<ffi::AnyBuffer>());                 // output

// The attribute sits between the two operands, as in the handler's parameters.
XLA_FFI_DEFINE_HANDLER_SYMBOL(QuantizeFP8RowwiseHandler, QuantizeFP8RowwiseFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<hipStream_t>>()
                                  .Arg<ffi::AnyBuffer>()                   // input
                                  .Attr<int64_t>("axis")
                                  .Arg<ffi::Buffer<ffi::DataType::F32>>()  // scale (may be empty)
                                  .Ret<ffi::AnyBuffer>()                   // output
                                  .Ret<ffi::Buffer<ffi::DataType::F32>>()  // scale_inv
                                  .Ret<ffi::AnyBuffer>());                 // workspace

}  // namespace primus_turbo::jax
