"""benchmarks/bench_ragged.py's chains on XLA:CPU: a barrier chain runs every call on the same
query (as `xlacc bench` does) and keeps each result; a fed chain passes each output on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
bench_ragged = pytest.importorskip("bench_ragged")
jnp = pytest.importorskip("jax", reason="the chains are jax programs").numpy


def step(q, a):
    return q * a["x"] + 1.0


def test_a_barrier_chain_gives_every_call_the_same_query():
    q, arrays = jnp.full((4,), 2.0), {"x": jnp.full((4,), 3.0)}
    results = bench_ragged.compile_chain(step, q, arrays, 3, "barrier")(q, arrays)
    assert [float(r[0]) for r in results] == [7.0, 7.0, 7.0]


def test_a_fed_chain_gives_each_call_the_output_before():
    q, arrays = jnp.full((4,), 2.0), {"x": jnp.full((4,), 3.0)}
    assert float(bench_ragged.compile_chain(step, q, arrays, 3, "fed")(q, arrays)[0]) == ((2 * 3 + 1) * 3 + 1) * 3 + 1
