"""Timing a call in a child process: back-to-back calls waited on once per sample, so that a short
kernel is timed rather than the host's dispatch and wait; and whether the host was the bound."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

BENCH_WARMUP = 3
BENCH_MIN_SAMPLES = 5
BENCH_MAX_SAMPLES = 50
BENCH_SECONDS = 2.0
BENCH_SAMPLE_SECONDS = 0.002
BENCH_MAX_REPS = 1000
HOST_BOUND_SHARE = 0.98  # of a call's time spent queueing it: the GPU waited on the host, not the host on the GPU


class Timing(NamedTuple):
    seconds: float  # median seconds per call, in a queue of calls
    samples: int
    queued: float  # median seconds the host took to queue one call

    @property
    def host_bound(self) -> bool:
        """The host queued the calls no faster than the device ran them: the time is the
        dispatch's, not the kernel's."""
        return self.queued >= HOST_BOUND_SHARE * self.seconds


def steady_seconds(run: Callable[[], Any], reps: int, wait: Callable[[Any], Any], pipelined: bool) -> tuple[float, float]:
    """Seconds per run of ``reps`` runs queued back to back, and the share of that time the host
    spent queueing them. One more run goes first, untimed. ``pipelined`` (a device that runs what
    the host queued while the host goes on, such as a GPU): the first timed run is queued before
    the untimed one is waited for, and the clock starts when that one finishes, so the device is
    busy from the first instant timed. Waiting with an idle device counted the launch of the first
    run: an XLA:GPU executable reached its kernels 0.4 ms after the call (H200, jax 0.11), a
    third of a 1 ms sample. Else the clock starts after the untimed run is waited for."""
    lead = run()
    if not pipelined:
        wait(lead)
    start, queueing, last = time.perf_counter(), 0.0, lead
    for timed in range(reps):
        queued_at = time.perf_counter()
        last = run()
        queueing += time.perf_counter() - queued_at
        if pipelined and timed == 0:
            wait(lead)
            start = time.perf_counter()
    wait(last)
    elapsed = max(time.perf_counter() - start, 1e-9)
    return elapsed / reps, min(1.0, queueing / elapsed)


def time_call(function: Any, args: list[Any], wait: Any = None, sample_seconds: float = BENCH_SAMPLE_SECONDS, pipelined: bool | None = None) -> Timing:
    """Seconds per call after warm-up. Each sample runs the call back to back enough times to last
    ``sample_seconds`` and waits once at the end (:func:`steady_seconds`), so a short kernel is
    timed, not the host's dispatch and wait. ``wait(result)`` blocks until a result is computed
    (default: jax.block_until_ready); ``pipelined`` defaults to whether jax's backend is a GPU."""
    import jax  # lazy: jax only in the child that times

    wait = wait or jax.block_until_ready
    pipelined = jax.default_backend() == "gpu" if pipelined is None else pipelined
    for _ in range(BENCH_WARMUP):
        wait(function(*args))
    reps = calls_per_sample(function, args, wait, sample_seconds)
    samples: list[float] = []
    queued: list[float] = []
    deadline = time.perf_counter() + BENCH_SECONDS
    while len(samples) < BENCH_MIN_SAMPLES or (len(samples) < BENCH_MAX_SAMPLES and time.perf_counter() < deadline):
        seconds, queued_share = steady_seconds(lambda: function(*args), reps, wait, pipelined)
        samples.append(seconds)
        queued.append(queued_share * seconds)
    return Timing(statistics.median(samples), len(samples), statistics.median(queued))


def calls_per_sample(function: Any, args: list[Any], wait: Any, sample_seconds: float = BENCH_SAMPLE_SECONDS) -> int:
    start = time.perf_counter()
    wait(function(*args))
    once = max(time.perf_counter() - start, 1e-7)
    return int(min(BENCH_MAX_REPS, max(1, sample_seconds // once)))
