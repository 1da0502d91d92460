"""The torchax route on the GPU: the custom call from a torch program, against the same op in plain
torch ops under torchax, torch eager on CUDA, and the custom call from jax directly.

    PYTHONPATH=. python3 benchmarks/bench_torchax.py --out DIR [--workdir DIR]

Rows (issue 11): add, 64M f32; rms-norm, [8192, 8192] bf16 (run-smoke --framework torchax --bench,
which times all four in one process); paged attention, 64 sequences x 2048 tokens, 32/8 heads, head
128, bf16, block 16 (the project's decode_torchax.py --bench: the KV cache held as jax arrays, the
query from torch, the output a torch tensor, against gather + scaled_dot_product_attention in torch
eager). Also reproduces what happens when jax preallocates the GPU next to torch (the text doctor's
jax-preallocation rule reads). Writes DIR/bench_torchax.json and DIR/jax_preallocation.log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# (name, template, dtype, --sizes): 64M elements; rms-norm's example shape for 64M is [8192, 8192].
SMOKE_ROWS = (("add_f32", "add", "f32", 1 << 26), ("rms_bf16", "rms-norm", "bf16", 1 << 26))
PAGED = ("paged", "paged-attention", "bf16")

PREALLOCATION = """
import jax, jax.numpy as jnp, torch
jnp.ones(1).block_until_ready()  # jax starts on the GPU
free, total = torch.cuda.mem_get_info()
print(f"after jax started: {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB free", flush=True)
x = torch.empty(int(total * 0.5), dtype=torch.uint8, device="cuda")  # half the GPU for torch
print("torch allocated half the GPU", flush=True)
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def xlacc(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "xlacc", *args], cwd=cwd, capture_output=True, text=True, env=env())
    if check and done.returncode != 0:
        raise SystemExit(f"xlacc {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def make(workdir: Path, name: str, template: str, dtype: str) -> Path:
    if not (workdir / name / "xlacc.toml").is_file():
        xlacc("new", name, "--template", template, "--platform", "cuda", "--dtype", dtype, "--framework", "jax,torchax", cwd=workdir)
    xlacc("build", name, cwd=workdir)
    return workdir / name


def smoke_row(project: Path, size: int) -> dict:
    done = xlacc("run-smoke", "--framework", "torchax", "--bench", "--sizes", str(size), "--json", cwd=project, check=False)
    report = json.loads(done.stdout)
    failed = [c for c in report["checks"] if c["ok"] is False]
    return {"exit_code": done.returncode, "failed": failed, "bench": report.get("bench", {}), "versions": report.get("versions")}


def paged_row(project: Path) -> dict:
    done = subprocess.run([sys.executable, "decode_torchax.py", "--bench", "--json"], cwd=project, capture_output=True, text=True, env=env())
    if done.returncode != 0:
        return {"exit_code": done.returncode, "stderr": done.stderr[-4000:]}
    return {"exit_code": 0, **json.loads(done.stdout.strip().splitlines()[-1])}


def preallocation(out: Path) -> dict:
    """jax with its default preallocation, then torch asking for half the GPU; and the same with
    XLA_PYTHON_CLIENT_PREALLOCATE=false."""
    results = {}
    for label, extra in (("default", {}), ("XLA_PYTHON_CLIENT_PREALLOCATE=false", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})):
        child_env = {k: v for k, v in env().items() if not k.startswith("XLA_PYTHON_CLIENT_")}
        done = subprocess.run([sys.executable, "-c", PREALLOCATION], capture_output=True, text=True, env={**child_env, **extra})
        text = done.stdout + done.stderr
        results[label] = {"exit_code": done.returncode, "tail": text[-1500:]}
        if label == "default":
            out.write_text(text)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--build-only", action="store_true", help="write and build the projects, time nothing")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="xlacc-bench-torchax-"))
    workdir.mkdir(parents=True, exist_ok=True)
    wanted = [(name, template, dtype) for name, template, dtype, _ in SMOKE_ROWS] + [PAGED]
    with ThreadPoolExecutor(len(wanted)) as pool:
        projects = dict(zip([w[0] for w in wanted], pool.map(lambda w: make(workdir, *w), wanted)))
    if args.build_only:
        return 0
    import torch

    result = {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device",
        "python": platform.python_version(),
        "rows": {name: smoke_row(projects[name], size) for name, _, _, size in SMOKE_ROWS},
    }
    result["rows"]["paged_attention_64x2048"] = paged_row(projects[PAGED[0]])
    result["jax_preallocation"] = preallocation(args.out / "jax_preallocation.log")
    (args.out / "bench_torchax.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
