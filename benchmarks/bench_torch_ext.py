"""One PyTorch extension kernel called two ways: from torch, built as a torch extension with
torch.utils.cpp_extension, and from XLA (jax.jit), wrapped unchanged by `xlacc new --from`.

The kernel is vLLM's paged_attention_v1 launcher (csrc/attention/paged_attention_v1.cu): the
torch side compiles that file with a small binding of its own against the real torch headers;
the XLA side is a project made with

    xlacc new pa --from CSRC/attention/paged_attention_v1.cu --include CSRC --dtype bf16 --accept-guesses

and built with `xlacc build`. Both run on the same inputs, a decode step of NUM_SEQS sequences of
SEQ_LEN tokens (bf16, 32 query heads, 8 KV heads, head 128, block 16: the defaults), and must give
the same output bit for bit. Run on a GPU machine from the repository root:

    python3 benchmarks/bench_torch_ext.py --csrc CSRC --project pa [--build-dir DIR] [--out FILE.json]

Each side is timed as the median over samples of (the time of `--calls` back-to-back calls, to the
last result ready) / calls, the samples of the two sides interleaved; the ratio is XLA's over torch's.
--build-only builds the torch extension and exits (to overlap it with other work).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

NUM_HEADS, NUM_KV_HEADS, HEAD_SIZE, BLOCK_SIZE = 32, 8, 128, 16
# The binding the torch side needs: vLLM registers the launcher in its own ops library, which is
# not part of the benchmark; this declares it as paged_attention_v1.cu defines it.
BINDING = """#include <torch/extension.h>
#include <optional>
#include <string>

void paged_attention_v1(torch::Tensor& out, torch::Tensor& query, torch::Tensor& key_cache, torch::Tensor& value_cache,
                        int64_t num_kv_heads, double scale, torch::Tensor& block_tables, torch::Tensor& seq_lens, int64_t block_size,
                        int64_t max_seq_len, const std::optional<torch::Tensor>& alibi_slopes, const std::string& kv_cache_dtype,
                        torch::Tensor& k_scale, torch::Tensor& v_scale, const int64_t tp_rank, const int64_t blocksparse_local_blocks,
                        const int64_t blocksparse_vert_stride, const int64_t blocksparse_block_size,
                        const int64_t blocksparse_head_sliding_step);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("paged_attention_v1", &paged_attention_v1); }
"""


def build_torch_extension(csrc: Path, build_dir: Path, arch: str):
    from torch.utils import cpp_extension

    build_dir.mkdir(parents=True, exist_ok=True)
    binding = build_dir / "binding.cpp"
    binding.write_text(BINDING)
    started = time.perf_counter()
    module = cpp_extension.load(
        name="vllm_paged_attention_v1",
        sources=[str(binding), str(csrc / "attention" / "paged_attention_v1.cu")],
        extra_include_paths=[str(csrc)],
        extra_cflags=["-O3", "-std=c++17"],
        extra_cuda_cflags=["-O3", "-std=c++17", f"-gencode=arch=compute_{arch},code=sm_{arch}"],
        build_directory=str(build_dir),
        verbose=False,
    )
    print(f"torch extension built in {time.perf_counter() - started:.1f} s", flush=True)
    return module


def problem(num_seqs: int, seq_len: int, seed: int = 0):
    """NumPy operands in vLLM's v1 cache layout, and the launcher's scalars."""
    import ml_dtypes

    rng = np.random.default_rng(seed)
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = 16 // bf16.itemsize
    blocks_per_seq = -(-seq_len // BLOCK_SIZE)
    num_blocks = num_seqs * blocks_per_seq
    arrays = {
        "query": rng.standard_normal((num_seqs, NUM_HEADS, HEAD_SIZE), dtype=np.float32).astype(bf16),
        "key_cache": rng.standard_normal((num_blocks, NUM_KV_HEADS, HEAD_SIZE // x, BLOCK_SIZE, x), dtype=np.float32).astype(bf16),
        "value_cache": rng.standard_normal((num_blocks, NUM_KV_HEADS, HEAD_SIZE, BLOCK_SIZE), dtype=np.float32).astype(bf16),
        "block_tables": rng.permutation(num_blocks).astype(np.int32).reshape(num_seqs, blocks_per_seq),
        "seq_lens": np.full((num_seqs,), seq_len, np.int32),
        "k_scale": np.ones((1,), np.float32),
        "v_scale": np.ones((1,), np.float32),
    }
    scalars = {"scale": HEAD_SIZE**-0.5, "max_seq_len": seq_len, "tp_rank": 0, "blocksparse_local_blocks": 0,
               "blocksparse_vert_stride": 0, "blocksparse_block_size": 64, "blocksparse_head_sliding_step": 0}  # fmt: skip
    return arrays, scalars


def to_torch(array: np.ndarray):
    """A torch tensor of the same bits (torch reads no ml_dtypes bfloat16 array directly)."""
    import torch

    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def torch_call(module, arrays: dict, scalars: dict):
    import torch

    t = {name: to_torch(a).cuda() for name, a in arrays.items()}
    out = torch.empty_like(t["query"])

    def call():
        module.paged_attention_v1(
            out, t["query"], t["key_cache"], t["value_cache"], NUM_KV_HEADS, scalars["scale"], t["block_tables"], t["seq_lens"],
            BLOCK_SIZE, scalars["max_seq_len"], None, "auto", t["k_scale"], t["v_scale"], 0, 0, 0, 64, 0,
        )  # fmt: skip
        return out

    return call, torch.cuda.synchronize


def xla_call(project: Path, arrays: dict, scalars: dict):
    import jax

    sys.path.insert(0, str(project.resolve()))
    from pa.jax import pa

    operands = [jax.device_put(arrays[name]) for name in ("query", "key_cache", "value_cache", "block_tables", "seq_lens", "k_scale", "v_scale")]
    jitted = jax.jit(lambda *ops: pa(*ops, **scalars))
    result = {}

    def call():
        result["out"] = jitted(*operands)
        return result["out"]

    return call, lambda: jax.block_until_ready(result.get("out"))


def per_call(call, sync, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    sync()
    return (time.perf_counter() - start) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csrc", type=Path, required=True, help="vLLM's csrc folder (attention/paged_attention_v1.cu in it)")
    parser.add_argument("--project", type=Path, default=Path("pa"), help="the xlacc project wrapping paged_attention_v1, built")
    parser.add_argument("--build-dir", type=Path, default=Path("build/torch_ext"))
    parser.add_argument("--arch", default="90")
    parser.add_argument("--num-seqs", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")

    module = build_torch_extension(args.csrc, args.build_dir, args.arch)
    if args.build_only:
        return 0
    import torch

    arrays, scalars = problem(args.num_seqs, args.seq_len)
    sides = {"torch": torch_call(module, arrays, scalars), "xla": xla_call(args.project, arrays, scalars)}
    outputs = {}
    for name, (call, sync) in sides.items():
        for _ in range(3):
            out = call()
        sync()
        outputs[name] = np.asarray(out.float().cpu()) if name == "torch" else np.asarray(out, dtype=np.float32)
    difference = float(np.max(np.abs(outputs["torch"] - outputs["xla"])))
    times = {name: [] for name in sides}
    for _ in range(args.samples):
        for name, (call, sync) in sides.items():
            times[name].append(per_call(call, sync, args.calls))
    medians = {name: statistics.median(values) for name, values in times.items()}
    kv_bytes = 2 * args.num_seqs * args.seq_len * NUM_KV_HEADS * HEAD_SIZE * 2
    result = {
        "device": torch.cuda.get_device_name(),
        "problem": f"{args.num_seqs} x {args.seq_len} paged attention, bf16, {NUM_HEADS}/{NUM_KV_HEADS} heads, head {HEAD_SIZE}, block {BLOCK_SIZE}",
        "torch_us": medians["torch"] * 1e6,
        "xla_us": medians["xla"] * 1e6,
        "ratio_xla_over_torch": medians["xla"] / medians["torch"],
        "max_abs_difference": difference,
        "kv_gb_per_s_torch": kv_bytes / medians["torch"] / 1e9,
        "samples_us": {name: [v * 1e6 for v in values] for name, values in times.items()},
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    print(f"{result['device']}: {result['problem']}")
    print(f"torch extension {result['torch_us']:.1f} us, xla (xlacc) {result['xla_us']:.1f} us, ratio {result['ratio_xla_over_torch']:.3f}, "
          f"max |difference| {difference:g}")  # fmt: skip
    return 0 if result["ratio_xla_over_torch"] <= 1.03 and difference == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
