// A small PyTorch-style launcher (XLA:CPU twin) that writes new rows into a cache in place, as a
// decode step's KV-cache update does; written for xlacc's tests.
#include <torch/all.h>
#include <ATen/cuda/CUDAContext.h>

namespace {
template <typename scalar_t>
void write_rows(const scalar_t* rows, scalar_t* cache, const int32_t* slots, int64_t num_tokens, int64_t row_size, int64_t num_slots) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t slot = slots[t];
    if (slot < 0 || slot >= num_slots) continue;  // padding
    for (int64_t i = 0; i < row_size; ++i) cache[slot * row_size + i] = rows[t * row_size + i];
  }
}
}  // namespace

void write_cache(torch::Tensor& rows,          // [num_tokens, row_size]
                 torch::Tensor& cache,         // [num_slots, row_size]
                 torch::Tensor& slot_mapping,  // [num_tokens]
                 int64_t num_tokens) {
  TORCH_CHECK(cache.size(1) == rows.size(1), "rows and cache disagree on the row size: ", rows.size(1), " vs ", cache.size(1));
  auto stream = at::cuda::getCurrentCUDAStream();
  (void)stream.stream();
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "write_cache", [&] {
    write_rows<scalar_t>(rows.data_ptr<scalar_t>(), cache.data_ptr<scalar_t>(), slot_mapping.data_ptr<int32_t>(), num_tokens,
                         rows.size(1), cache.size(0));
  });
}
