"""The attention peers' checks that need no GPU: which batches cuDNN's paged attention can take
from the ragged op's operands, and the reason each peer gives where it cannot run."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from xlacc.commands.bench import attention_peers
from xlacc.commands.bench.peers import PeerUnavailable


def batch(q_lens, kv_lens, padding_seqs=0):
    """cu_q_lens and kv_lens as the ragged op takes them, padding sequences after those in use."""
    cu = np.concatenate([[0], np.cumsum(q_lens), np.full(padding_seqs, sum(q_lens))]).astype(np.int32)
    return cu, np.asarray(list(kv_lens) + [7] * padding_seqs, np.int32)


@pytest.mark.parametrize(("q_lens", "kv_lens", "expected"), [
    ([1] * 4, [2048] * 4, (1, 2048, 4)),  # a decode step
    ([512] * 2, [512] * 2, (512, 512, 2)),  # prefill from an empty cache
    ([512] * 3, [8704] * 3, (512, 8704, 3)),  # a chunk onto a cached context
])
def test_a_uniform_batch_gives_its_lengths_and_padding_sequences_are_left_out(q_lens, kv_lens, expected):
    cu, kv = batch(q_lens, kv_lens, padding_seqs=2)
    assert attention_peers.uniform_batch(cu, kv, len(q_lens)) == expected


@pytest.mark.parametrize(("q_lens", "kv_lens", "in_use", "says"), [
    ([1, 33], [100, 33], 2, "this batch is ragged"),
    ([1, 1], [100, 200], 2, "this batch is ragged"),
    ([0, 0], [5, 5], 2, "this batch is ragged"),
    ([1, 1], [1, 1], 0, "no sequence in use"),
])
def test_a_batch_cudnn_cannot_take_says_why(q_lens, kv_lens, in_use, says):
    cu, kv = batch(q_lens, kv_lens)
    with pytest.raises(PeerUnavailable, match=says):
        attention_peers.uniform_batch(cu, kv, in_use)


def test_the_ragged_peer_needs_a_gpu_and_a_16_bit_query():
    pytest.importorskip("jax", reason="a peer's prepare() runs in the bench child, with jax")
    operands = [np.zeros((4, 8, 64), np.float16), None, None, *batch([1] * 4, [16] * 4), None, np.array([4], np.int32)]
    with pytest.raises(PeerUnavailable, match=r"NVIDIA GPUs only \(this run is on XLA:CPU\)"):
        attention_peers.cudnn_ragged.prepare(operands, {"scale": 1.0}, SimpleNamespace(platform="cpu"))
    operands[0] = operands[0].astype(np.float32)
    with pytest.raises(PeerUnavailable, match="takes bf16 or f16; this problem is float32"):
        attention_peers.cudnn_ragged.prepare(operands, {"scale": 1.0}, SimpleNamespace(platform="gpu"))


def test_the_ragged_peer_refuses_a_window_or_a_cap():
    pytest.importorskip("jax", reason="a peer's prepare() runs in the bench child, with jax")
    operands = [np.zeros((4, 8, 64), np.float16), None, None, *batch([1] * 4, [16] * 4), None, np.array([4], np.int32)]
    for attrs in ({"scale": 1.0, "sliding_window": 128}, {"scale": 1.0, "soft_cap": 30.0}):
        with pytest.raises(PeerUnavailable, match="no sliding window or soft-cap"):
            attention_peers.cudnn_ragged.prepare(operands, attrs, SimpleNamespace(platform="gpu"))


def test_the_pool_cudnn_reads_holds_each_sequence_s_blocks_in_the_order_of_the_cache():
    """cuDNN's paged attention takes a pool of exactly seqs x max_blocks blocks: the copy keeps the
    blocks in the cache's order, so that it reads them as scattered as the op does."""
    jnp = pytest.importorskip("jax", reason="the peers' pools are jax arrays").numpy
    key_cache = jnp.arange(8 * 2, dtype=jnp.float32).reshape(8, 2)  # block b holds 2b, 2b + 1
    tables = np.array([[5, 2], [0, 7]], np.int32)
    keys, values, pool_tables = attention_peers._pool_in_block_order(key_cache, key_cache + 100, tables)
    assert keys.shape == (4, 2) and (np.asarray(keys)[np.asarray(pool_tables)] == np.asarray(key_cache)[tables]).all()
    assert (np.asarray(values) == np.asarray(keys) + 100).all()
    assert np.asarray(pool_tables).tolist() == [[2, 1], [0, 3]]  # blocks 0 < 2 < 5 < 7 keep their order
