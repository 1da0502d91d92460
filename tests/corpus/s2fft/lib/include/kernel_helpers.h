// Modelled on astro-informatics/s2fft lib/include/kernel_helpers.h (MIT); rewritten, not copied: see SOURCE.md.
// Packing a descriptor struct into bytes and reading it back from the opaque string.
#ifndef S2FFT_KERNEL_HELPERS_H_
#define S2FFT_KERNEL_HELPERS_H_

#include <cstring>
#include <stdexcept>
#include <string>

namespace s2fft {

template <typename T>
std::string BytesOf(const T& value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
const T* UnpackDescriptor(const char* opaque, std::size_t opaque_len) {
  if (opaque_len != sizeof(T)) {
    throw std::runtime_error("descriptor has the wrong size");
  }
  return reinterpret_cast<const T*>(opaque);
}

}  // namespace s2fft

#endif  // S2FFT_KERNEL_HELPERS_H_
