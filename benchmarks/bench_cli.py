"""Wall time of the CLI a user waits for, against `python -c pass`.

    python benchmarks/bench_cli.py [--runs N]

Modes: `xlacc --help` (budget 0.25 s), a no-op `xlacc build` of a cached project (0.25 s), `xlacc
new` of a cpu project (0.5 s), and `xlacc doctor` on a shared library (0.25 s), a log and a source
folder (0.5 s each), a 30 MB log (2 s) and a 200-file repository made of the corpus and the test artifacts (0.5 s). Each runs N
times in a fresh process; the median is reported with its ratio to an empty interpreter start, and the exit
status is 1 when a mode exceeds its budget. The library is built here (nvcc when present, else
g++), and its check asks for a missing symbol, which makes doctor search the .symtab too: the
slowest path.
"""

from __future__ import annotations

import argparse
import compileall
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts" / "doctor"
# Start-up of what a user runs many times a day: the help, a build with nothing to do.
STARTUP_BUDGETS_S = {"--help": 0.25, "build (no-op)": 0.25, "new": 0.5}
BUDGETS_S = {
    **STARTUP_BUDGETS_S,
    "doctor --so": 0.25,
    "doctor --log": 0.5,
    "doctor sources": 0.5,
    "doctor 30 MB log": 2.0,
    "doctor 200 files": 0.5,
}
REPOSITORY_FILES = 200
REPOSITORY_SUFFIXES = {".py", ".cc", ".cu", ".cpp", ".h", ".cuh", ".hpp", ".md", ".txt", ".toml"}
KERNEL = r"""
#include <cuda_runtime.h>
__global__ void bump(float* x, long n) { long i = blockIdx.x * 256L + threadIdx.x; if (i < n) x[i] += 1.0f; }
extern "C" void bump_entry(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {
  bump<<<1, 256, 0, stream>>>(static_cast<float*>(buffers[0]), 256);
  cudaGetLastError();
}
"""
HOST = 'extern "C" void bump_entry(void* stream, void** buffers, const char* opaque, unsigned long n) {}\n'


def build_library(directory: Path) -> tuple[Path, str]:
    nvcc = shutil.which("nvcc")
    if nvcc:
        (directory / "bump.cu").write_text(KERNEL)
        out = directory / "libbump.so"
        subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80",
                        str(directory / "bump.cu"), "-o", str(out)], check=True, capture_output=True)
        return out, "nvcc, static cudart"
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise SystemExit("neither nvcc nor g++ found: cannot build a library to check")
    (directory / "bump.cc").write_text(HOST)
    out = directory / "libbump.so"
    subprocess.run([compiler, "-shared", "-fPIC", str(directory / "bump.cc"), "-o", str(out)], check=True, capture_output=True)
    return out, "g++"


def build_log(directory: Path) -> Path:
    """Every log artifact, five times over: about a quarter of a megabyte of tracebacks."""
    logs = sorted((ARTIFACTS / "logs").rglob("*.log"))
    text = "\n".join(p.read_text() for p in logs) * 5
    out = directory / "run.log"
    out.write_text(text)
    return out


def build_big_log(directory: Path, megabytes: int = 30) -> Path:
    """A training run's chatter, ``megabytes`` of it, with the log artifacts' tracebacks inside."""
    noise = "".join(f"I0101 00:00:00.{i:06d} 1 gpu_compiler.cc:1] compiling module jit_step_{i}, step {i} loss 0.{i:04d}\n" for i in range(10_000))
    tracebacks = "\n".join(p.read_text() for p in sorted((ARTIFACTS / "logs").rglob("*.log")))
    out = directory / "train.log"
    with out.open("w") as stream:
        for index in range(megabytes * 1_000_000 // len(noise) + 1):
            stream.write(noise)
            if index in (3, 20):
                stream.write(tracebacks)
    return out


def build_repository(directory: Path) -> Path:
    """A repository of ``REPOSITORY_FILES`` files: the corpus and the doctor artifacts, copied into
    packages until the count is reached."""
    pool = sorted(
        p for base in (ROOT / "tests" / "corpus", ARTIFACTS / "sources", ARTIFACTS / "cases")
        for p in base.rglob("*") if p.is_file() and p.suffix in REPOSITORY_SUFFIXES
    )
    out = directory / "repository"
    for index in range(REPOSITORY_FILES):
        source = pool[index % len(pool)]
        target = out / f"pkg{index // len(pool)}" / source.relative_to(ROOT / "tests")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return out


def build_project(directory: Path) -> Path:
    """A cpu `add` project, built once so that the timed builds are cache hits."""
    subprocess.run([sys.executable, "-m", "xlacc", "new", "noop", "--platform", "cpu", "--framework", "jax"], cwd=directory, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "xlacc", "build", "noop"], cwd=directory, check=True, capture_output=True)
    return directory / "noop"


def median_wall(argv: list[str], runs: int) -> float:
    return median_times(argv, runs)[0]


def median_times(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of ``runs`` runs of ``argv``.

    The CPU time barely moves when other work shares the machine; the wall time does.
    """
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    xlacc = [sys.executable, "-m", "xlacc"]
    doctor = xlacc + ["doctor"]
    # xlacc's bytecode, as `pip install` leaves it: with PYTHONDONTWRITEBYTECODE set (as on this
    # machine) a checkout whose sources changed would otherwise recompile them on every start.
    compileall.compile_dir(ROOT / "xlacc", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        library, how = build_library(Path(tmp))
        log = build_log(Path(tmp))
        project = build_project(Path(tmp))
        big_log = build_big_log(Path(tmp))
        repository = build_repository(Path(tmp))
        sources = ARTIFACTS / "sources"
        modes = {
            "--help": xlacc + ["--help"],
            "build (no-op)": xlacc + ["build", str(project)],
            # --force: each run writes the project again into the same folder (its templates come
            # from jinja's bytecode cache after the first run, as for a user's every `new` but the first)
            "new": xlacc + ["new", "fresh", "--platform", "cpu", "--framework", "jax", "--dir", str(Path(tmp) / "fresh"), "--force"],
            "doctor --so": doctor + ["--so", str(library), "--symbol", "bump_entry", "--symbol", "no_such_entry", "--arch", "sm_90"],
            "doctor --log": doctor + ["--log", str(log)],
            "doctor sources": doctor + [str(sources)],
            "doctor 30 MB log": doctor + ["--log", str(big_log)],
            "doctor 200 files": doctor + [str(repository)],
        }
        baseline = median_wall([sys.executable, "-c", "pass"], args.runs)
        print(f"python -c pass: {baseline * 1000:.0f} ms (median of {args.runs})")
        print(f"library: {library.stat().st_size // 1024} KB ({how}); log: {log.stat().st_size // 1024} KB; "
              f"sources: {sum(1 for p in sources.rglob('*') if p.is_file())} files; big log: {big_log.stat().st_size // 1_000_000} MB; "
              f"repository: {sum(1 for p in repository.rglob('*') if p.is_file())} files")
        print(f"{'mode':<17} {'wall':>8} {'x pass':>7} {'cpu':>8}  {'budget':>7}")
        over = False
        for name, argv in modes.items():
            wall, cpu = median_times(argv, args.runs)
            budget = BUDGETS_S[name]
            over |= wall > budget
            print(f"{name:<17} {wall * 1000:>6.0f} ms {wall / baseline:>6.1f}x {cpu * 1000:>5.0f} ms  {budget:>5.2f} s  {'ok' if wall <= budget else 'OVER'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
