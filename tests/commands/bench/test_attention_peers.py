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
