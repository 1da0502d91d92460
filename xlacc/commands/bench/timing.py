"""How the bench child times a call (imported only there; it imports jax).

On a GPU, R calls run in one jit, each after the one before: the next call's operands pass through
``jax.lax.optimization_barrier`` together with the previous call's result, and every result is
returned. XLA then can neither merge the calls (CSE), nor fuse one call's work into the next (XLA:GPU
removes barriers only after fusion and scheduling), nor drop one; host dispatch is paid once per R
calls. XLA:CPU removes barriers before it fuses, so there each call is its own jit, queued back to back.

A sample queues whole chains for about ``sample_seconds`` and waits once; its time per call is
the wall time over the calls, counted from the end of one more chain queued before them (on a GPU
the clock starts with the device already busy: :func:`xlacc.commands.smoke.timing.steady_seconds`).
``--cold-l2`` gives each call in turn one of K copies of the operands, K copies holding at least
twice the L2, so a call never finds its operands in the cache.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from xlacc.commands.smoke.timing import steady_seconds

# A chain of R calls lasts about this long on a GPU: several times what the host takes to queue one
# (an executable with command buffers: 0.3-0.5 ms on an H200 host), so queued chains keep the GPU busy.
CHAIN_SECONDS = 3e-3
PROBE_CHAIN = 8  # calls in the chain that estimates one call's time
MAX_CHAIN = 64
KEPT_BYTES = 2 << 30  # a chain returns every call's result: at most this many bytes of them
SAMPLE_SECONDS = 10e-3
MAX_REPS = 2000
DISPATCH_CALLS = 200


@dataclass
class Contender:
    """One implementation of the op at one problem: ``call(*operands)`` on device arrays."""

    name: str
    role: str  # "op", "vmap", "xla", "peer"
    call: Callable[..., Any]
    operand_sets: list[list[Any]]  # K sets (K > 1 with --cold-l2)
    note: str = ""
    compiled: Any = None
    window: int = 1  # operand sets a chain takes: min(K, its length)
    cursor: int = 0  # the set the next chain starts with, where K exceeds a chain's length
    reps: int = 1
    pipelined: bool = True  # the device runs queued chains while the host goes on (a GPU): see steady_seconds
    samples: list[float] = field(default_factory=list)  # seconds per call
    queued: list[float] = field(default_factory=list)  # share of each sample spent queueing


def chained(call: Callable[..., Any], length: int, sets: int, scope: str, barriers: bool) -> Callable[..., Any]:
    """A function of ``sets`` operand lists running ``call`` ``length`` times, each call after the
    previous (see the module's docstring); it returns every call's result."""
    import jax  # lazy: jax only in the bench child

    def run(*operand_sets):
        results, previous = [], None
        for i in range(length):
            operands = operand_sets[i % sets]
            if previous is not None and barriers:
                operands, previous = jax.lax.optimization_barrier((operands, previous))
                results[-1] = previous
            with jax.named_scope(scope):
                previous = call(*operands)
            results.append(previous)
        return results

    run.__name__ = scope  # the jit is named after it in a trace: jit(NAME)
    return run


def chain_length(single_seconds: float, result_bytes: int, on_gpu: bool) -> int:
    """Calls per chain: enough for about CHAIN_SECONDS, as many results as KEPT_BYTES holds; one on XLA:CPU."""
    if not on_gpu:
        return 1
    wanted = math.ceil(CHAIN_SECONDS / max(single_seconds, 1e-7))
    return int(max(1, min(MAX_CHAIN, wanted, KEPT_BYTES // max(result_bytes, 1))))


def per_call_seconds(call: Callable[..., Any], operands: list[Any], on_gpu: bool) -> float:
    """A first estimate of one call's time, to size the chains: on a GPU from a chain of
    PROBE_CHAIN calls timed in steady state, so that neither a dispatch slower than the kernel
    (tens of microseconds on some hosts) nor an executable's launch passes for it; on XLA:CPU
    from one call."""
    import jax  # lazy: jax only in the bench child

    if not on_gpu:
        compiled = jax.jit(call).lower(*operands).compile()
        wait(compiled(*operands))
        return once_seconds(lambda: compiled(*operands))
    probe = Contender("probe", "probe", call, [list(operands)])
    compile_chain(probe, PROBE_CHAIN, "probe", on_gpu)
    wait(run_chain(probe))
    return min(steady_seconds(lambda: run_chain(probe), 1, wait, pipelined=True)[0] for _ in range(3)) / PROBE_CHAIN


def compile_chain(contender: Contender, length: int, scope: str, on_gpu: bool) -> None:
    """Compile the chain over min(K, length) operand sets; where K is larger, each run of the
    chain is handed the next ones in turn (:func:`run_chain`), so consecutive calls never share a set."""
    import jax  # lazy: jax only in the bench child

    contender.window = min(len(contender.operand_sets), length)
    function = chained(contender.call, length, contender.window, scope, barriers=on_gpu)
    contender.compiled = jax.jit(function).lower(*contender.operand_sets[: contender.window]).compile()


def run_chain(contender: Contender) -> Any:
    sets = contender.operand_sets
    if contender.window == len(sets):
        return contender.compiled(*sets)
    window = [sets[(contender.cursor + i) % len(sets)] for i in range(contender.window)]
    contender.cursor = (contender.cursor + contender.window) % len(sets)
    return contender.compiled(*window)


def wait(value: Any) -> None:
    import jax  # lazy: jax only in the bench child

    jax.block_until_ready(value)


def once_seconds(function: Callable[[], Any], repeats: int = 3) -> float:
    """The best of a few waited calls: a first estimate, dispatch and wait included."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        wait(function())
        best = min(best, time.perf_counter() - start)
    return best


def calibrate(contender: Contender, length: int, sample_seconds: float, on_gpu: bool) -> None:
    """Warm the chain up and pick how many chains a sample queues."""
    contender.pipelined = on_gpu
    wait(run_chain(contender))
    chain, _ = steady_seconds(lambda: run_chain(contender), 1, wait, on_gpu)
    contender.reps = int(max(1, min(MAX_REPS, sample_seconds // max(chain, 1e-7))))


def take_sample(contender: Contender, length: int) -> None:
    seconds, queued = steady_seconds(lambda: run_chain(contender), contender.reps, wait, contender.pipelined)
    contender.samples.append(seconds / length)
    contender.queued.append(queued)


def interleave(contenders: list[Contender], length: int, rounds: int, samples: int) -> None:
    """Each round samples every contender ``samples`` times, the first one moving on by one each
    round: clocks and caches treat them alike, and none is always timed first after a pause."""
    for turn in range(rounds):
        order = contenders[turn % len(contenders):] + contenders[: turn % len(contenders)]
        for contender in order:
            for _ in range(samples):
                take_sample(contender, length)


def dispatch_seconds(device: Any) -> float:
    """What the host takes to queue one call of a jit doing almost nothing (one element plus
    one), the floor under any one-call-per-jit time."""
    import jax  # lazy: jax only in the bench child
    import jax.numpy as jnp  # lazy: jax only in the bench child

    tiny = jax.device_put(jnp.zeros((1,), jnp.float32), device)
    step = jax.jit(lambda x: x + 1)
    wait(step(tiny))
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        value = tiny
        for _ in range(DISPATCH_CALLS):
            value = step(value)
        best = min(best, (time.perf_counter() - start) / DISPATCH_CALLS)
        wait(value)
    return best


WARM_SECONDS = 0.2  # the GPU runs copies this long before anything is timed (clocks up)


def copy_rate(device: Any, nbytes: int, rounds: int = 3, samples: int = 3, on_gpu: bool = True) -> dict[str, Any]:
    """Bytes read and written per second by XLA's device-to-device copy of ``nbytes`` and by a
    streaming ``x + 1`` over the same bytes, chained as the contenders are and timed in turns; the
    faster is the practical limit the contenders' rates are shares of. Also checks that the copy's
    compiled chain holds one copy per call (else the rate would not be a copy's)."""
    import jax.numpy as jnp  # lazy: jax only in the bench child

    source = jax_zeros(device, max(1, nbytes // 4))
    kernels = {"copy": jnp.copy, "x + 1": lambda x: x + 1}
    length = chain_length(per_call_seconds(jnp.copy, [source], on_gpu), source.nbytes, on_gpu)
    contenders = [Contender(name, "copy", kernel, [[source]]) for name, kernel in kernels.items()]
    for contender in contenders:
        compile_chain(contender, length, contender.name, on_gpu)
    deadline = time.perf_counter() + (WARM_SECONDS if on_gpu else 0.0)
    while True:
        for contender in contenders:
            calibrate(contender, length, SAMPLE_SECONDS, on_gpu)
        if time.perf_counter() >= deadline:
            break
    interleave(contenders, length, rounds, samples)
    rates = {c.name: 2 * source.nbytes / sorted(c.samples)[len(c.samples) // 2] for c in contenders}
    copies = len(re.findall(r"= f32\[\d+\]\{0\} copy(?:-start)?\(", contenders[0].compiled.as_text()))
    best = max(rates, key=rates.get)
    return {"copy_bytes_per_s": rates[best], "copy_kernel": best, "copy_rates": rates, "copy_samples": contenders[0].samples,
            "copy_chain": length, "copies_in_chain": copies}  # fmt: skip


def jax_zeros(device: Any, count: int) -> Any:
    import jax  # lazy: jax only in the bench child
    import jax.numpy as jnp  # lazy: jax only in the bench child

    return jax.device_put(jnp.zeros((count,), jnp.float32), device)
