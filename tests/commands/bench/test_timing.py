"""The bench child's timing machinery on XLA:CPU: chains return every call's result, --cold-l2's
operand sets rotate so consecutive calls never share one, and the chain length follows the device."""

from __future__ import annotations

import pytest

from xlacc.commands.bench import timing

jax = pytest.importorskip("jax", reason="the bench's timing runs jax")
jnp = jax.numpy


def test_a_chain_runs_the_call_length_times_and_returns_each_result():
    x, y = jnp.arange(4.0), jnp.ones(4)
    run = jax.jit(timing.chained(lambda a, b: a + b, 5, 1, "op", barriers=True))
    results = run([x, y])
    assert len(results) == 5 and all((r == x + y).all() for r in results)
    assert timing.chained(lambda a: a, 1, 1, "my_op", barriers=False).__name__ == "my_op"  # jit(my_op) in a trace


def test_cold_sets_rotate_across_chains_so_no_two_calls_in_a_row_share_one():
    sets = [[jnp.full((1,), float(i))] for i in range(5)]
    contender = timing.Contender("op", "op", lambda a: a * 1.0, sets)
    timing.compile_chain(contender, 2, "op", on_gpu=False)
    seen = [float(r[0]) for _ in range(5) for r in timing.run_chain(contender)]
    assert seen == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    few = timing.Contender("op", "op", lambda a: a * 1.0, sets[:2])
    timing.compile_chain(few, 4, "op", on_gpu=False)
    assert [float(r[0]) for r in timing.run_chain(few)] == [0, 1, 0, 1]


def test_chain_length_follows_the_device_and_the_memory_its_results_take():
    assert timing.chain_length(1e-6, 4, on_gpu=False) == 1  # XLA:CPU: one call per jit
    assert timing.chain_length(1e-6, 4, on_gpu=True) == timing.MAX_CHAIN
    assert timing.chain_length(timing.CHAIN_SECONDS / 4, 4, on_gpu=True) == 4
    assert timing.chain_length(1e-6, timing.KEPT_BYTES // 3, on_gpu=True) == 3


def test_samples_are_seconds_per_call_and_interleaving_rotates_who_goes_first():
    order = []
    contenders = [timing.Contender(name, "op", lambda a: a + 1, [[jnp.zeros(8)]]) for name in "abc"]
    for c in contenders:
        timing.compile_chain(c, 1, c.name, on_gpu=False)
        timing.calibrate(c, 1, 1e-4, on_gpu=False)
    real = timing.take_sample
    try:
        timing.take_sample = lambda c, length: (order.append(c.name), real(c, length))
        timing.interleave(contenders, 1, rounds=3, samples=2)
    finally:
        timing.take_sample = real
    assert order == list("aabbcc") + list("bbccaa") + list("ccaabb")
    assert all(len(c.samples) == 6 and all(0 < s < 1 for s in c.samples) for c in contenders)
