"""The attention templates' peers, all reached through jax's private or experimental modules
(named in the reference, section 8): for the paged-attention template cuDNN's paged attention,
cuDNN's dense SDPA and JAX's Pallas GPU paged attention, for the ragged one cuDNN's paged
attention. Each is guarded: where its module, the GPU or the dtype is missing it raises
PeerUnavailable with the reason, and the bench goes on without it.

The paged-attention template's operands are vLLM's: query [seqs, heads, head], key_cache and
value_cache [blocks, block, kv_heads, head], block_tables [seqs, max_blocks] and seq_lens [seqs].
Each peer's prepare() rearranges them once into the layout the peer reads; only the peer's call
is timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xlacc.commands.bench.peers import PeerCall, PeerUnavailable

PALLAS_BLOCKS = (8, 4, 2, 1)  # pages_per_compute_block candidates, largest dividing a partition


def _needs_gpu(device: Any, what: str) -> None:
    if getattr(device, "platform", "cpu") != "gpu":
        raise PeerUnavailable(f"{what} runs on NVIDIA GPUs only (this run is on XLA:{str(getattr(device, 'platform', 'cpu')).upper()})")


def _needs_16_bit(query: Any, what: str) -> None:
    if query.dtype.itemsize != 2:
        raise PeerUnavailable(f"{what} takes bf16 or f16; this problem is {query.dtype}")


def _dense_pool(key_cache: Any, value_cache: Any, tables: Any) -> tuple[Any, Any, int]:
    """Each sequence's blocks copied into a pool of its own, in order: [seqs * max_blocks, ...]."""
    num_seqs, max_blocks = tables.shape
    shape = (num_seqs * max_blocks, *key_cache.shape[1:])
    return key_cache[tables].reshape(shape), value_cache[tables].reshape(shape), max_blocks


def _pool_in_block_order(key_cache: Any, value_cache: Any, tables: Any) -> tuple[Any, Any, Any]:
    """The blocks the tables name, copied into a pool of exactly seqs x max_blocks blocks that keeps
    their order in the cache, and the tables into it: a peer reads its blocks as scattered as the op
    reads its own, not each sequence's one after another (on an H200 cuDNN timed alike either way
    at the ragged template's bench shapes, 232.5 against 232.8 us at 32 x 512 new tokens)."""
    import jax.numpy as jnp  # lazy: jax only in the bench child

    flat = np.asarray(tables).reshape(-1)
    by_block = np.argsort(flat, kind="stable")  # table entries in the order of the blocks they name
    rank = np.empty_like(by_block)
    rank[by_block] = np.arange(flat.size)
    order = jnp.asarray(flat[by_block])
    return key_cache[order], value_cache[order], jnp.asarray(rank.reshape(tables.shape), jnp.int32)


def _cudnn_paged(label: str, query: Any, key_cache: Any, value_cache: Any, tables: Any, lens: tuple[Any, Any], attrs: dict[str, Any],
                 causal: bool, note: str = "") -> PeerCall:
    """``jax._src.cudnn.fused_attention_stablehlo.paged_attention`` on query [seqs, new tokens, heads,
    head] with (new tokens, context) per sequence in `lens`; it needs a pool of exactly seqs x
    blocks_per_seq blocks, so the sequences' blocks are copied into one first (in the cache's order)."""
    try:
        from jax._src.cudnn.fused_attention_stablehlo import MaskType, paged_attention  # lazy: a private module, guarded
    except ImportError as exc:
        raise PeerUnavailable(f"this jax has no cuDNN paged attention ({exc})") from None
    keys, values, pool_tables = _pool_in_block_order(key_cache, value_cache, tables)
    page_table = pool_tables[:, None, :, None]
    mask = MaskType.PADDING_CAUSAL if causal else MaskType.PADDING

    def call(q, k, v, q_lens, kv_lens, table):
        return paged_attention(q, k, v, q_lens, kv_lens, table, table, scale=attrs["scale"], mask_type=mask)

    return PeerCall(label, call, [query, keys, values, *lens, page_table], "blocks copied to a pool of seqs x blocks_per_seq, in the cache's order" + note)


class CudnnPaged:
    """cuDNN's paged attention at a decode step (one query token a sequence)."""

    label = "cudnn paged"

    def prepare(self, operands: list[Any], attrs: dict[str, Any], device: Any) -> PeerCall:
        import jax.numpy as jnp  # lazy: jax only in the bench child

        _needs_gpu(device, "cuDNN")
        query, key_cache, value_cache, tables, lens = operands
        _needs_16_bit(query, "cuDNN attention")
        return _cudnn_paged(self.label, query[:, None], key_cache, value_cache, tables, (jnp.ones((query.shape[0],), jnp.int32), lens), attrs, causal=False)


class CudnnSdpa:
    """``jax.nn.dot_product_attention(implementation="cudnn")`` over the cache gathered dense
    ([seqs, max_tokens, kv_heads, head]): the dense kernel's speed on the same tokens."""

    label = "cudnn sdpa (dense cache)"

    def prepare(self, operands: list[Any], attrs: dict[str, Any], device: Any) -> PeerCall:
        import jax  # lazy: jax only in the bench child

        _needs_gpu(device, "cuDNN")
        query, key_cache, value_cache, tables, lens = operands
        _needs_16_bit(query, "cuDNN attention")
        keys, values, max_blocks = _dense_pool(key_cache, value_cache, tables)
        dense = (query.shape[0], max_blocks * key_cache.shape[1], *key_cache.shape[2:])

        def call(q, k, v, kv_lens):
            return jax.nn.dot_product_attention(q, k, v, scale=attrs["scale"], key_value_seq_lengths=kv_lens, implementation="cudnn")

        return PeerCall(self.label, call, [query[:, None], keys.reshape(dense), values.reshape(dense), lens], "cache gathered dense first")


class PallasPaged:
    """``jax.experimental.pallas.ops.gpu.paged_attention``: pages [kv_heads, blocks, block, head],
    no scale (the query is scaled first), pages_per_sequence % k_splits == 0. The candidates are
    the k_splits that first gives every SM a program and its neighbours; the bench keeps the fastest."""

    label = "pallas paged"

    def prepare(self, operands: list[Any], attrs: dict[str, Any], device: Any) -> list[PeerCall]:
        _needs_gpu(device, "Pallas GPU paged attention")
        try:
            from jax.experimental.pallas.ops.gpu import paged_attention as pallas  # lazy: an experimental module, guarded
        except ImportError as exc:
            raise PeerUnavailable(f"this jax has no Pallas GPU paged attention ({exc})") from None
        query, key_cache, value_cache, tables, lens = operands
        pages = [key_cache.transpose(2, 0, 1, 3), value_cache.transpose(2, 0, 1, 3)]
        scaled = query * attrs["scale"]
        calls = []
        for splits in self.split_candidates(tables.shape[1], query.shape[0] * key_cache.shape[2], getattr(device, "core_count", 132)):
            block = next(b for b in PALLAS_BLOCKS if (tables.shape[1] // splits) % b == 0)

            def call(q, k, v, t, n, splits=splits, block=block):
                return pallas.paged_attention(q, k, v, t, n, k_splits=splits, pages_per_compute_block=block)

            calls.append(PeerCall(f"{self.label} (k_splits {splits}, block {block})", call, [scaled, *pages, tables, lens]))
        return calls

    @staticmethod
    def split_candidates(pages_per_sequence: int, programs: int, sms: int) -> list[int]:
        splits = [k for k in (1, 2, 4, 8, 16, 32, 64) if pages_per_sequence % k == 0]
        filling = next((i for i, k in enumerate(splits) if programs * k >= sms), len(splits) - 1)
        return splits[max(0, filling - 1) : filling + 2]


class CudnnRagged:
    """cuDNN's paged attention on the ragged-paged-attention template's operands (query [tokens,
    heads, head], cu_q_lens, kv_lens, block_tables, num_seqs). A call takes one query length and
    one mask for every sequence, so it serves uniform batches (`xlacc bench --shape
    SEQSxCONTEXT[xNEW]`): PADDING for a decode step, PADDING_CAUSAL for prefill from an empty
    cache, PADDING for a chunk onto a cached context (cuDNN aligns its causal mask top-left, so a
    chunk sees its whole context: a little more work than causal, and another result)."""

    label = "cudnn paged"

    def prepare(self, operands: list[Any], attrs: dict[str, Any], device: Any) -> PeerCall:
        import jax.numpy as jnp  # lazy: jax only in the bench child

        _needs_gpu(device, "cuDNN")
        query, key_cache, value_cache, cu_q_lens, kv_lens, tables, num_seqs = operands
        _needs_16_bit(query, "cuDNN attention")
        if attrs.get("sliding_window") or attrs.get("soft_cap"):
            raise PeerUnavailable("cuDNN's paged attention has no sliding window or soft-cap")
        new, context, seqs = uniform_batch(np.asarray(cu_q_lens), np.asarray(kv_lens), int(np.asarray(num_seqs).reshape(-1)[0]))
        shaped = query[: seqs * new].reshape(seqs, new, *query.shape[1:])
        lens = tuple(jnp.full((seqs,), n, jnp.int32) for n in (new, context))
        chunk = "; the chunk sees its whole context (cuDNN's causal mask is top-left)" if 1 < new < context else ""
        return _cudnn_paged(self.label, shaped, key_cache, value_cache, tables[:seqs], lens, attrs, causal=new == context and new > 1, note=chunk)


def uniform_batch(cu_q_lens: Any, kv_lens: Any, num_seqs: int) -> tuple[int, int, int]:
    """(new tokens, context, sequences) of a batch whose sequences in use all share them, packed
    from the first query row; else PeerUnavailable saying why cuDNN cannot take it."""
    seqs = max(0, min(num_seqs, len(kv_lens)))
    if seqs == 0:
        raise PeerUnavailable("no sequence in use")
    new = {int(n) for n in cu_q_lens[1 : seqs + 1] - cu_q_lens[:seqs]}
    contexts = {int(n) for n in kv_lens[:seqs]}
    if int(cu_q_lens[0]) != 0 or len(new) != 1 or len(contexts) != 1 or min(new) < 1 or min(new) > min(contexts):
        raise PeerUnavailable("cuDNN's paged attention takes one query length and one context a call; this batch is ragged "
                              "(xlacc bench --shape SEQSxCONTEXT[xNEW] makes a uniform one)")  # fmt: skip
    return min(new), min(contexts), seqs


cudnn_paged = CudnnPaged()
cudnn_ragged = CudnnRagged()
cudnn_sdpa = CudnnSdpa()
pallas_paged = PallasPaged()
