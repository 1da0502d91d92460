// Several functions in one file, two of them templates: the CPU twin of elementwise.cu.
template <typename T>
void scale(const T* x, T* y, float alpha, int n) {
  for (int i = 0; i < n; ++i) y[i] = static_cast<T>(alpha * x[i]);
}

template <typename T>
void axpy(const T* x, const T* y, T* out, float alpha, int n) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<T>(alpha * x[i] + y[i]);
}

void relu(const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
