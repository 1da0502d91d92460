"""What `pa` computes: vLLM's paged_attention_v1 (decode attention over a paged KV cache, v1 layout).

key_cache [num_blocks, num_kv_heads, head_size/x, block_size, x], value_cache [num_blocks,
num_kv_heads, head_size, block_size], query [num_seqs, num_heads, head_size]; sequence s attends to
its first seq_lens[s] tokens, found through block_tables[s]."""

import numpy as np

from .testing import DEFAULT_DTYPE, numpy_dtype

NUM_HEADS, NUM_KV_HEADS, HEAD_SIZE, BLOCK_SIZE = 32, 8, 128, 16


def reference(query, key_cache, value_cache, block_tables, seq_lens, k_scale, v_scale, *, scale, max_seq_len=2048, tp_rank=0,
              blocksparse_local_blocks=0, blocksparse_vert_stride=0, blocksparse_block_size=64, blocksparse_head_sliding_step=0, xp=np):
    f32 = xp.float32
    num_blocks, num_kv_heads, hx, block_size, x = key_cache.shape
    head_size = hx * x
    num_seqs, num_heads, _ = query.shape
    keys = xp.transpose(key_cache, (0, 3, 1, 2, 4)).reshape(num_blocks, block_size, num_kv_heads, head_size)
    values = xp.transpose(value_cache, (0, 3, 1, 2))  # [num_blocks, block_size, num_kv_heads, head_size]
    max_tokens = block_tables.shape[1] * block_size
    k = keys[block_tables].reshape(num_seqs, max_tokens, num_kv_heads, head_size).astype(f32)
    v = values[block_tables].reshape(num_seqs, max_tokens, num_kv_heads, head_size).astype(f32)
    group = num_heads // num_kv_heads
    q = query.astype(f32).reshape(num_seqs, num_kv_heads, group, head_size)
    scores = xp.einsum("skgd,stkd->skgt", q, k) * scale
    valid = xp.arange(max_tokens)[None, :] < seq_lens[:, None]
    scores = xp.where(valid[:, None, None, :], scores, -xp.inf)
    p = xp.exp(scores - xp.max(scores, axis=-1, keepdims=True))
    p = p / xp.sum(p, axis=-1, keepdims=True)
    out = xp.einsum("skgt,stkd->skgd", p, v).reshape(num_seqs, num_heads, head_size)
    return out.astype(query.dtype)


def problem(num_seqs, seq_len, rng, dtype):
    """A decode step: num_seqs sequences of seq_len tokens (the last one shorter), blocks shuffled."""
    dt = numpy_dtype(dtype)
    blocks_per_seq = -(-seq_len // BLOCK_SIZE)
    num_blocks = num_seqs * blocks_per_seq
    x = 16 // dt.itemsize
    query = rng.standard_normal((num_seqs, NUM_HEADS, HEAD_SIZE), dtype=np.float32).astype(dt)
    key_cache = rng.standard_normal((num_blocks, NUM_KV_HEADS, HEAD_SIZE // x, BLOCK_SIZE, x), dtype=np.float32).astype(dt)
    value_cache = rng.standard_normal((num_blocks, NUM_KV_HEADS, HEAD_SIZE, BLOCK_SIZE), dtype=np.float32).astype(dt)
    block_tables = rng.permutation(num_blocks).astype(np.int32).reshape(num_seqs, blocks_per_seq)
    seq_lens = np.full((num_seqs,), seq_len, np.int32)
    seq_lens[-1] = max(1, seq_len - 5)
    ones = np.ones((1,), np.float32)
    operands = [query, key_cache, value_cache, block_tables, seq_lens, ones, ones.copy()]
    attrs = {"scale": float(HEAD_SIZE**-0.5), "max_seq_len": int(seq_len), "tp_rank": 0, "blocksparse_local_blocks": 0,
             "blocksparse_vert_stride": 0, "blocksparse_block_size": 64, "blocksparse_head_sliding_step": 0}
    return operands, attrs


def example_inputs(size, rng, dtype=None):
    """About `size` query elements: size // 4096 sequences (at least 1) of 100 tokens."""
    return problem(max(1, min(size // 4096, 16)), 100, rng, dtype or DEFAULT_DTYPE)


def bytes_moved(operands, outputs):
    return sum(array.nbytes for array in operands) + sum(array.nbytes for array in outputs)
