// Note 000's kernel on XLA:CPU: the 2-parameter legacy entry point (api_version 1), and the
// element count written into the code.
#include <cstddef>

extern "C" __attribute__((visibility("default")))
void SimpleAdd(void* out, const void** in) {
  const float* a = static_cast<const float*>(in[0]);
  const float* b = static_cast<const float*>(in[1]);
  float* result = static_cast<float*>(out);
  const int size = 3;
  for (int i = 0; i < size; ++i) result[i] = a[i] + b[i];
}
