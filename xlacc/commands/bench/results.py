"""The bench child's raw samples turned into what the table, the JSON, the CSV and the chart show:
per problem and contender the time's median, spread and sample count, the rate against the copy
measured in the same process and against the card's datasheet, and the verdict against the op."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from xlacc.commands.bench import stats
from xlacc.commands.bench.cards import Card, card_for
from xlacc.commands.smoke.timing import HOST_BOUND_SHARE

NEAR_DISPATCH = 1.5  # a call (or a chain) within this factor of an empty jit's dispatch takes the host's time


@dataclass
class Row:
    problem: str
    name: str
    role: str
    time_us: stats.Summary
    gbps: float | None
    tflops: float | None
    copy_share: float | None
    peak_bandwidth_share: float | None
    peak_flops_share: float | None
    versus_op: stats.Verdict | None
    host_bound: str
    note: str
    max_abs_diff: float | None
    queued_share: float | None = None  # the median share of a sample the host spent queueing the chains

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("time_us", "versus_op")}
        out["time_us"] = self.time_us.to_json()
        out["versus_op"] = self.versus_op.to_json() if self.versus_op else None
        return out


@dataclass
class Problem:
    label: str
    shapes: list
    bytes: int
    flops: int | None
    chain: int
    sets: int
    launches_in_chain: int | None
    rows: list[Row] = field(default_factory=list)
    unavailable: list[dict] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "rows"}
        out["rows"] = [r.to_json() for r in self.rows]
        return out


@dataclass
class BenchResult:
    op: str
    environment: dict[str, Any]
    copy_gbps: float
    dispatch_us: float
    l2_bytes: int
    l2_from: str
    copy_kernel: str
    copy_rates: dict[str, float]
    card: Card | None
    problems: list[Problem]
    method: str
    command: str
    cwd: str

    @property
    def on_gpu(self) -> bool:
        return self.environment.get("platform") == "gpu"

    def roofline_us(self, problem: Problem) -> float | None:
        """The time the problem's bytes take at the copy rate measured in this process."""
        return problem.bytes / (self.copy_gbps * 1e3) if self.copy_gbps else None

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "command": self.command,
            "cwd": self.cwd,
            "environment": self.environment,
            "card": self.card.to_json() if self.card else "unknown",
            "copy_gbps": self.copy_gbps,
            "copy_kernel": self.copy_kernel,
            "copy_rates_gbps": self.copy_rates,
            "dispatch_us": self.dispatch_us,
            "l2_bytes": self.l2_bytes,
            "method": self.method,
            "problems": [p.to_json() | {"roofline_us": self.roofline_us(p)} for p in self.problems],
        }


def build(op: str, records: dict[str, Any], command: str, cwd: str, method: str) -> BenchResult:
    """``records``: the child's data by key (bench_env, bench_limits, bench_case as a list)."""
    environment = records.get("bench_env", {})
    limits = records.get("bench_limits", {})
    card = card_for(environment.get("device", ""), environment.get("platform", "cpu"))
    copy_gbps = limits.get("copy_bytes_per_s", 0.0) / 1e9
    dispatch_us = limits.get("dispatch_s", 0.0) * 1e6
    on_gpu = environment.get("platform") == "gpu"
    problems = [problem(case, card, copy_gbps, dispatch_us, on_gpu) for case in records.get("bench_case", [])]
    rates = {name: rate / 1e9 for name, rate in limits.get("copy_rates", {}).items()}
    return BenchResult(op, environment, copy_gbps, dispatch_us, limits.get("l2_bytes", 0), limits.get("l2_from", ""), limits.get("copy_kernel", "copy"),
                       rates, card, problems, method, command, cwd)  # fmt: skip


def problem(case: dict[str, Any], card: Card | None, copy_gbps: float, dispatch_us: float, on_gpu: bool) -> Problem:
    found = Problem(case["label"], case["shapes"], int(case["bytes"]), case.get("flops"), case["chain"], case["sets"],
                    case.get("launches_in_chain"), unavailable=list(case.get("unavailable", [])))  # fmt: skip
    timed = [c for c in case["contenders"] if c["samples"]]
    op = next((c for c in timed if c["role"] == "op"), None)
    op_time = stats.summarize(op["samples"]).scaled(1e6) if op else None
    for contender in timed:
        found.rows.append(row(found, contender, case.get("dtype", ""), card, copy_gbps, dispatch_us if on_gpu else 0.0, op_time))
    return found


def row(problem: Problem, contender: dict[str, Any], dtype: str, card: Card | None, copy_gbps: float, dispatch_us: float,
        op_time: stats.Summary | None) -> Row:  # fmt: skip
    time_us = stats.summarize(contender["samples"]).scaled(1e6)
    seconds = time_us.median / 1e6
    gbps = problem.bytes / seconds / 1e9 if seconds else None
    tflops = problem.flops / seconds / 1e12 if problem.flops and seconds else None
    versus = None if contender["role"] == "op" or op_time is None else stats.compare(op_time, time_us)
    queued_share = statistics.median(contender["queued"]) if contender.get("queued") else None
    return Row(
        problem=problem.label,
        name=contender["name"],
        role=contender["role"],
        time_us=time_us,
        gbps=gbps,
        tflops=tflops,
        copy_share=gbps / copy_gbps if gbps and copy_gbps else None,
        peak_bandwidth_share=gbps / card.memory_gbps if gbps and card else None,
        peak_flops_share=tflops / card.peak_tflops(dtype) if tflops and card else None,
        versus_op=versus,
        host_bound=host_bound(time_us.median, dispatch_us, problem.chain, queued_share or 0.0),
        note=contender.get("note", ""),
        max_abs_diff=contender.get("max_abs_diff"),
        queued_share=queued_share,
    )


def host_bound(call_us: float, dispatch_us: float, chain: int, queued_share: float = 0.0) -> str:
    """Why the time is the host's rather than the device's, or "" when it is the device's. The
    host queueing the chains for (nearly) the whole of each sample, or a chain of calls that lasts
    no longer than dispatching one jit, kept the device waiting on the host. (On XLA:CPU the call
    runs while it is dispatched, and ``dispatch_us`` is 0: nothing to compare.)"""
    if not dispatch_us:
        return ""
    if queued_share >= HOST_BOUND_SHARE:
        return f"host-bound: queueing the chains took the host {queued_share:.0%} of each sample, so the device waited on it"
    if call_us * chain <= NEAR_DISPATCH * dispatch_us:
        if chain == 1:
            return f"host-bound: {call_us:.1f} us per call is about an empty jit's dispatch ({dispatch_us:.1f} us)"
        return f"host-bound: a chain of {chain} calls took {call_us * chain:.1f} us, about an empty jit's dispatch ({dispatch_us:.1f} us)"
    if call_us <= NEAR_DISPATCH * dispatch_us:
        return f"one call per jit would be host-bound: dispatching a jit takes {dispatch_us:.1f} us, the call {call_us:.1f} us"
    return ""
