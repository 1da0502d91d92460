// Modelled on astro-informatics/s2fft lib/src/extensions.cc (MIT); rewritten, not copied: see SOURCE.md.
// One legacy GPU entry point (the 4-parameter signature) for the HEALPix FFT, a descriptor built in
// Python and read back from the opaque bytes, and a nanobind module that hands out its capsule.
#include <cstddef>
#include <nanobind/nanobind.h>

#include "kernel_helpers.h"
#include "kernel_nanobind_helpers.h"

#ifndef NO_CUDA_COMPILER
#include "cuda_runtime.h"
#include "plan_cache.h"
#include "s2fft.h"
#include "s2fft_kernels.h"
#else
void report_no_cuda() { throw std::runtime_error("built without CUDA: the HEALPix FFT is not available"); }
#endif

namespace nb = nanobind;

namespace s2fft {

#ifdef NO_CUDA_COMPILER
void healpix_fft_cuda() { report_no_cuda(); }
#else
template <typename Complex>
void run_forward(cudaStream_t stream, void** buffers, s2fftDescriptor d) {
  auto* in = reinterpret_cast<Complex*>(buffers[0]);
  auto* out = reinterpret_cast<Complex*>(buffers[1]);
  auto exec = std::make_shared<s2fftExec<Complex>>();
  PlanCache::GetInstance().GetS2FFTExec(d, exec);
  exec->Forward(d, stream, in);
  s2fftKernels::launch_spectral_extension(in, out, d.nside, d.harmonic_band_limit, stream);
}

template <typename Complex>
void run_backward(cudaStream_t stream, void** buffers, s2fftDescriptor d) {
  auto* in = reinterpret_cast<Complex*>(buffers[0]);
  auto* out = reinterpret_cast<Complex*>(buffers[1]);
  auto exec = std::make_shared<s2fftExec<Complex>>();
  PlanCache::GetInstance().GetS2FFTExec(d, exec);
  s2fftKernels::launch_spectral_folding(in, out, d.nside, d.harmonic_band_limit, d.shift, stream);
  exec->Backward(d, stream, out);
}

void healpix_fft_cuda(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  s2fftDescriptor d = *UnpackDescriptor<s2fftDescriptor>(opaque, opaque_len);
  if (d.forward) {
    d.double_precision ? run_forward<cufftDoubleComplex>(stream, buffers, d) : run_forward<cufftComplex>(stream, buffers, d);
  } else {
    d.double_precision ? run_backward<cufftDoubleComplex>(stream, buffers, d) : run_backward<cufftComplex>(stream, buffers, d);
  }
}
#endif  // NO_CUDA_COMPILER

nb::dict Registration() {
  nb::dict targets;
  targets["healpix_fft_cuda"] = EncapsulateFunction(healpix_fft_cuda);
  return targets;
}

}  // namespace s2fft

NB_MODULE(_s2fft, m) {
  m.def("registration", &s2fft::Registration);
  m.def("build_healpix_fft_descriptor",
        [](int nside, int band_limit, bool reality, bool forward, bool normalize, bool double_precision) {
#ifndef NO_CUDA_COMPILER
          s2fft::s2fftDescriptor d(nside, band_limit, reality, forward, normalize, /*shift=*/true, double_precision);
          // The plans are made here, once, so the entry point finds them in the cache.
          size_t work_size = 0;
          if (double_precision) {
            auto exec = std::make_shared<s2fft::s2fftExec<cufftDoubleComplex>>();
            s2fft::PlanCache::GetInstance().GetS2FFTExec(d, exec);
            exec->Initialize(d, work_size);
          } else {
            auto exec = std::make_shared<s2fft::s2fftExec<cufftComplex>>();
            s2fft::PlanCache::GetInstance().GetS2FFTExec(d, exec);
            exec->Initialize(d, work_size);
          }
          return s2fft::PackDescriptor(d);
#else
          report_no_cuda();
          return nb::bytes();
#endif
        });
}
