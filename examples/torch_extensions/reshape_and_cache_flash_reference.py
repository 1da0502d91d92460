"""What `kvw` computes: vLLM's reshape_and_cache_flash: each token's key and value rows written into
the caches ([num_blocks, block_size, num_heads, head_size]) at slot_mapping[t]; a negative slot is
padding, skipped. The caches are written in place (results aliasing the inputs)."""

import numpy as np

from .testing import DEFAULT_DTYPE, numpy_dtype


def reference(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, *, xp=np):
    num_blocks, block_size, num_heads, head_size = key_cache.shape
    rows = slot_mapping.shape[0]
    keep = slot_mapping >= 0
    slots = xp.where(keep, slot_mapping, num_blocks * block_size)  # padding goes past the end: dropped
    flat_k = key_cache.reshape(num_blocks * block_size, num_heads, head_size)
    flat_v = value_cache.reshape(num_blocks * block_size, num_heads, head_size)
    if xp is np:
        flat_k, flat_v = flat_k.copy(), flat_v.copy()
        flat_k[slots[keep]] = key[:rows][keep]
        flat_v[slots[keep]] = value[:rows][keep]
    else:
        flat_k = flat_k.at[slots].set(key[:rows], mode="drop")
        flat_v = flat_v.at[slots].set(value[:rows], mode="drop")
    return flat_k.reshape(key_cache.shape), flat_v.reshape(value_cache.shape)


def example_inputs(size, rng, dtype=None):
    """size // 1024 new tokens (at least 1) of 8 heads x 128, into a cache of 64 blocks of 16."""
    dt = numpy_dtype(dtype or DEFAULT_DTYPE)
    num_tokens, num_blocks, block_size, heads, head_size = max(1, min(size // 1024, 512)), 64, 16, 8, 128
    key = rng.standard_normal((num_tokens, heads, head_size), dtype=np.float32).astype(dt)
    value = rng.standard_normal((num_tokens, heads, head_size), dtype=np.float32).astype(dt)
    key_cache = rng.standard_normal((num_blocks, block_size, heads, head_size), dtype=np.float32).astype(dt)
    value_cache = rng.standard_normal((num_blocks, block_size, heads, head_size), dtype=np.float32).astype(dt)
    slots = rng.permutation(num_blocks * block_size)[:num_tokens].astype(np.int64)
    slots[::7] = -1  # padding
    ones = np.ones((1,), np.float32)
    return [key, value, key_cache, value_cache, slots, ones, ones.copy()], {}


def bytes_moved(operands, outputs):
    return sum(a.nbytes for a in operands[:2]) * 2
