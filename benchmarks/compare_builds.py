"""Builds of the ragged op against each other in turns, on one GPU.

Each build's `bench_ragged.py --prebuilt` runs in a process of its own (two builds register custom
calls of the same name), in an order that puts every build first as often as last (A B B A per
round), so a card that drifts over the minutes weighs on each build alike. Then, per point, each
build's mean time a call over its processes, its ratio to the first build's, and its ratio to
cuDNN's paged attention and to the decode template measured in the same processes (the fair
comparison when the card drifts). Each process keeps its own record: NAME_rROUND_tTURN.json.

    python3 benchmarks/compare_builds.py --build main=BUILD_A --build new=BUILD_B --out DIR \\
        --rounds 2 --only "decode,mixed" [--skip jnp,pallas,cudnn_sdpa] [--tests "cuda and bf16"]
    python3 benchmarks/compare_builds.py --summarize DIR     # the table again from DIR's records

A BUILD is a `bench_ragged.py --build-only --workdir BUILD` folder, built from the tree to compare;
two builds of the same kernel.cu are refused.
With --tests, each build first runs the ragged op's GPU tests selected by that -k expression on its
own library (NAME_tests.txt), and a build that fails them is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "bench_ragged.py"
GPU_TESTS = Path(__file__).resolve().parents[1] / "tests" / "templates" / "test_ragged_paged_attention.py"
RECORD = re.compile(r"^(?P<name>.+)_r(?P<round>\d+)_t(?P<turn>\d+)\.json$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a record's file name begins with it
PEERS = ("cudnn", "decode")


def turns(names: list[str], rounds: int) -> list[tuple[str, int, int]]:
    """(build, round, turn) in running order: each round the builds forwards, then backwards."""
    order = names + names[::-1]
    return [(name, r, t) for r in range(1, rounds + 1) for t, name in enumerate(order, start=1)]


def parse_build(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or not NAME.match(name) or not folder:
        raise argparse.ArgumentTypeError(f"--build takes NAME=FOLDER (NAME of letters, digits, '.', '_', '-'), not {text!r}")
    return name, Path(folder)


def run_turn(name: str, folder: Path, record: Path, only: str, skip: str) -> int:
    """One process of bench_ragged.py for one build; its output goes beside its record."""
    command = [sys.executable, str(BENCH), "--prebuilt", "--workdir", str(folder), "--out", str(record), "--skip", skip, "--rounds", "3", "--samples", "3"]
    if only:
        command += ["--only", only]
    with record.with_suffix(".log").open("w") as log:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode


def gpu_test_command(expression: str) -> list[str]:
    """The ragged op's GPU tests that `expression` selects (run with RAGGED_PREBUILT set to a build's project)."""
    return [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", str(GPU_TESTS), "-k", expression]


def passing_builds(folders: dict[str, Path], expression: str, out: Path, run=subprocess.run) -> dict[str, Path]:
    """The builds whose GPU tests pass, each build's output in NAME_tests.txt."""
    passed = {}
    for name, folder in folders.items():
        report = out / f"{name}_tests.txt"
        with report.open("w") as log:
            code = run(gpu_test_command(expression), stdout=log, stderr=subprocess.STDOUT, check=False, env={**os.environ, "RAGGED_PREBUILT": str(folder / "ragged")}).returncode
        lines = report.read_text().strip().splitlines()
        print(f"tests of {name}: {lines[-1] if lines else 'no output'}" + ("" if code == 0 else f" (exit {code}: not timed)"), flush=True)
        if code == 0:
            passed[name] = folder
    return passed


def same_kernels(folders: dict[str, Path]) -> tuple[str, str] | None:
    """The first two builds whose rendered kernels are byte for byte the same: timing them against
    each other would measure nothing."""
    seen: dict[bytes, str] = {}
    for name, folder in folders.items():
        kernel = folder / "ragged" / "kernel.cu"
        text = kernel.read_bytes() if kernel.is_file() else name.encode()  # no kernel: nothing to compare
        if text in seen:
            return seen[text], name
        seen[text] = name
    return None


def load_records(folder: Path) -> list[tuple[str, dict]]:
    """(build, record) for every readable record in the folder, in running order."""
    found = []
    for path in folder.iterdir():
        match = RECORD.match(path.name)
        if not match:
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        found.append(((int(match["round"]), int(match["turn"])), match["name"], record))
    return [(name, record) for _, name, record in sorted(found, key=lambda item: item[0])]


def summarize(records: list[tuple[str, dict]]) -> list[dict]:
    """Per point and build: mean us, processes, ratio to the first build's mean, and the range of
    each peer's time over the build's in the same processes (above 1: the build is faster)."""
    builds = list(dict.fromkeys(name for name, _ in records))
    times: dict[str, dict[str, list[float]]] = {}
    peers: dict[str, dict[str, dict[str, list[float]]]] = {}
    for name, record in records:
        for row in record.get("rows", []):
            us = row.get("us", {})
            if "xlacc" not in us:
                continue
            times.setdefault(row["label"], {}).setdefault(name, []).append(us["xlacc"])
            for peer, ratio in row.get("xlacc_vs", {}).items():  # bench_ragged.py's: the peer's time over the op's
                if peer in PEERS:
                    peers.setdefault(row["label"], {}).setdefault(name, {}).setdefault(peer, []).append(ratio)
    rows = []
    for label, by_build in times.items():
        first = next((statistics.mean(by_build[b]) for b in builds if b in by_build), None)
        for name in (b for b in builds if b in by_build):
            mean = statistics.mean(by_build[name])
            ratios = peers.get(label, {}).get(name, {})
            rows.append({"label": label, "build": name, "us": mean, "processes": len(by_build[name]), "vs_first": mean / first,
                         "vs_peers": {peer: (min(r), max(r)) for peer, r in ratios.items()}})  # fmt: skip
    return rows


def mixed_over_parts(records: list[tuple[str, dict]]) -> dict[str, tuple[float, float]]:
    """Per build, the range over its processes of the mixed batch's two parts' time (two calls)
    over the batch's in one call (above 1: one call is faster), where a record holds all three."""
    found: dict[str, list[float]] = {}
    for name, record in records:
        ratio = record.get("mixed_vs_parts", {}).get("parts_over_mixed")
        if ratio is not None:
            found.setdefault(name, []).append(ratio)
    return {name: (min(ratios), max(ratios)) for name, ratios in found.items()}


def report(records: list[tuple[str, dict]]) -> str:
    """The table, then each build's mixed batch against its parts."""
    lines = [table(summarize(records))]
    for name, (low, high) in mixed_over_parts(records).items():
        lines.append(f"{name}: the mixed batch's parts as two calls took {ratio_range(low, high)} its time in one call")
    return "\n".join(lines)


def ratio_range(low: float, high: float) -> str:
    return f"{low:.2f}x" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}x"


def table(rows: list[dict]) -> str:
    lines = ["| point | build | us (processes) | its time / the first build's | cuDNN's time / its | the decode template's / its |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        cudnn, decode = (ratio_range(*row["vs_peers"][name]) if name in row["vs_peers"] else "-" for name in PEERS)
        lines.append(f"| {row['label']} | {row['build']} | {row['us']:.1f} ({row['processes']}) | {row['vs_first']:.3f} | {cudnn} | {decode} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=parse_build, action="append", default=[], help="NAME=FOLDER, in the order to compare (the first is the base)")
    parser.add_argument("--out", type=Path, help="the folder for the records and logs")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="bench_ragged.py's --only")
    parser.add_argument("--skip", default="jnp,pallas,cudnn_sdpa", help="bench_ragged.py's --skip")
    parser.add_argument("--tests", metavar="EXPR", help="first run the GPU tests this -k expression selects on each build; time only those that pass")
    parser.add_argument("--summarize", type=Path, metavar="DIR", help="print the table of DIR's records and run nothing")
    args = parser.parse_args(argv)
    if args.summarize:
        if not args.summarize.is_dir():
            parser.error(f"--summarize: {args.summarize} is not a folder")
        records = load_records(args.summarize)
        if not records:
            parser.error(f"--summarize: {args.summarize} holds no NAME_rROUND_tTURN.json records")
        print(report(records))
        return 0
    if len(args.build) < 2 or args.out is None or args.rounds < 1:
        parser.error("give two --build NAME=FOLDER or more, --out DIR and --rounds of 1 or more (or --summarize DIR)")
    folders = dict(args.build)
    if len(folders) < len(args.build):
        parser.error("two --build share a name")
    missing = [str(folder) for folder in folders.values() if not (folder / "ragged").is_dir()]
    if missing:
        parser.error(f"not a bench_ragged.py --build-only folder (no ragged/ inside): {', '.join(missing)}")
    alike = same_kernels(folders)
    if alike:
        parser.error(f"{alike[0]} and {alike[1]} hold the same ragged/kernel.cu (was each rendered from its own tree?)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.tests:
        folders = passing_builds(folders, args.tests, args.out)
        if len(folders) < 2:
            print("fewer than two builds passed their tests: nothing timed", file=sys.stderr)
            return 1
    for name, r, t in turns(list(folders), args.rounds):
        record = args.out / f"{name}_r{r}_t{t}.json"
        code = run_turn(name, folders[name], record, args.only, args.skip)
        failed = "" if code == 0 else f" (exit {code}: see {record.with_suffix('.log')})"
        print(f"round {r} turn {t}: {name}{failed}", flush=True)
    print(report(load_records(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
