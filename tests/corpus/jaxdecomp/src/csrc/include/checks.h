// Modelled on DifferentiableUniverseInitiative/jaxDecomp src/csrc/include/checks.h (MIT); rewritten, not copied: see SOURCE.md.
// Status checks for the CUDA, cuDecomp and cuFFT calls: the CUDA one exits, the other two throw.
#ifndef JAXDECOMP_CHECKS_H_
#define JAXDECOMP_CHECKS_H_

#include <cstdio>
#include <cstdlib>
#include <exception>

#define CHECK_CUDA_EXIT(call)                                                  \
  do {                                                                         \
    cudaError_t status_ = (call);                                              \
    if (status_ != cudaSuccess) {                                              \
      std::printf("CUDA failure %s:%d: %s\n", __FILE__, __LINE__,              \
                  cudaGetErrorString(status_));                                \
      std::exit(EXIT_FAILURE);                                                 \
    }                                                                          \
  } while (0)

#define CHECK_CUDECOMP_EXIT(call)                                              \
  do {                                                                         \
    cudecompResult_t status_ = (call);                                         \
    if (status_ != CUDECOMP_RESULT_SUCCESS) {                                  \
      std::fprintf(stderr, "%s:%d cuDecomp failed (%d)\n", __FILE__, __LINE__, \
                   status_);                                                   \
      throw std::exception();                                                  \
    }                                                                          \
  } while (false)

#define CHECK_CUFFT_EXIT(call)                                                 \
  do {                                                                         \
    cufftResult_t status_ = (call);                                            \
    if (status_ != CUFFT_SUCCESS) {                                            \
      std::fprintf(stderr, "%s:%d cuFFT failed (%d)\n", __FILE__, __LINE__,    \
                   status_);                                                   \
      throw std::exception();                                                  \
    }                                                                          \
  } while (false)

#endif  // JAXDECOMP_CHECKS_H_
