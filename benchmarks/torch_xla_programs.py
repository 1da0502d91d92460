"""torch_xla's programs on the GPU, where torch_xla is not installed: lower here, run there.

torch_xla 2.9 has no CUDA backend, and the GPU machine has no torch_xla. So the programs torch_xla
emits for each cuda template's torch op are lowered on a CPU machine (torch_xla's CPU device; the
op lowers to the legacy custom call with api_version 2, as for a GPU) and saved as StableHLO text;
on the GPU machine jaxlib's XLA:GPU compiles and runs them with the op's legacy entry point
registered for "CUDA", and the results are compared with the reference at the sizes and
tolerances run-smoke uses. torch_xla's own runtime is never used.

    python benchmarks/torch_xla_programs.py emit --out benchmarks/data/torch_xla_programs.json   # CPU, torch_xla
    python benchmarks/torch_xla_programs.py run --programs benchmarks/data/torch_xla_programs.json \\
        --workdir DIR --out results.json                                                           # GPU, jax[cuda]

`run` writes and builds each project in DIR (or finds it built there) with the same `xlacc new`
request as `emit` used, so the target names and operand orders match.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from xlacc.commands.new import project as scaffold  # noqa: E402
from xlacc.commands.smoke.harness import DEFAULT_SIZES  # noqa: E402

SEED = 0
FRAMEWORKS = ["jax", "torchax", "torch-xla"]


def project_name(template: str) -> str:
    return f"{template.replace('-', '_')}_legacy"


def cuda_templates() -> list[str]:
    return sorted(name for name, meta in scaffold.available_templates().items() if "cuda" in meta.get("platforms", ("cuda",)))


def new_project(workdir: Path, template: str) -> Path:
    """The cuda project both sides use: api legacy, every framework (the legacy entry point is there)."""
    directory = workdir / project_name(template)
    if not (directory / "xlacc.toml").is_file():
        request = scaffold.NewRequest(name=project_name(template), template=template, platform="cuda", api="legacy",
                                      frameworks=FRAMEWORKS, directory=directory)
        scaffold.create(request)
    return directory


def emit(out: Path, workdir: Path) -> None:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch_xla

    from xlacc.commands.smoke import xla_program
    from xlacc.commands.smoke.harness import load_project
    from xlacc.commands.smoke.torch_arrays import to_torch

    device = torch_xla.device()
    entries = []
    for template in cuda_templates():
        project = load_project(new_project(workdir, template))
        op = getattr(project.module("torch"), project.spec.name)
        for size in DEFAULT_SIZES["gpu"]:
            for dtype in project.dtypes():
                operands, attrs = project.example_inputs(size, np.random.default_rng(SEED), dtype)
                tensors = [to_torch(a).to(device) for a in operands]
                outputs = op(*tensors, **attrs)
                program = xla_program.emit(outputs if isinstance(outputs, tuple) else (outputs,), tensors)
                entries.append({"template": template, "name": project.spec.name, "size": size, "dtype": dtype, "seed": SEED, **program.to_json()})
                print(f"{template} n={size} {dtype or ''}: {len(program.text)} characters of StableHLO", flush=True)
    versions = {"torch_xla": getattr(torch_xla, "__version__", "?"), "torch": __import__("torch").__version__}
    out.write_text(json.dumps({"emitted_with": versions, "programs": entries}, indent=1))
    print(f"wrote {len(entries)} programs to {out}")


def build(directory: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "xlacc", "build", str(directory)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    if done.returncode != 0:
        raise SystemExit(f"xlacc build {directory} failed:\n{done.stdout}\n{done.stderr}")


def run(programs_file: Path, workdir: Path, out: Path) -> int:
    import jax
    import jaxlib

    from xlacc.commands.smoke import numerics, xla_program
    from xlacc.commands.smoke.harness import as_tuple, load_project

    saved = json.loads(programs_file.read_text())
    device = jax.devices("gpu")[0]
    templates = sorted({entry["template"] for entry in saved["programs"]})
    directories = [new_project(workdir, template) for template in templates]
    with ThreadPoolExecutor(len(directories)) as pool:  # nvcc is slow: build every project at once
        list(pool.map(build, directories))
    projects = {template: load_project(directory) for template, directory in zip(templates, directories)}
    libraries = [  # kept loaded while the programs run
        xla_program.register_legacy(p.spec.target, p.package.library(), p.spec.legacy_symbol, "cuda") for p in projects.values()
    ]
    results = []
    for entry in saved["programs"]:
        template = entry["template"]
        project = projects[template]
        program = xla_program.EmittedProgram.from_json(entry)
        operands, attrs = project.example_inputs(entry["size"], np.random.default_rng(entry["seed"]), entry["dtype"])
        outputs = xla_program.run_stablehlo(program.text, program.arguments(operands), device)
        expected = as_tuple(project.reference(*[numerics.widen(a) for a in operands], **attrs))
        comparisons = [numerics.compare(o.name, got, want) for o, got, want in zip(project.spec.outputs, outputs, expected)]
        ok = len(outputs) == len(expected) and all(c.ok for c in comparisons)
        results.append({"template": template, "size": entry["size"], "dtype": entry["dtype"], "ok": ok, "detail": "; ".join(c.detail for c in comparisons)})
        print(f"{'ok ' if ok else 'FAIL'} {template} n={entry['size']} {entry['dtype'] or ''}: {results[-1]['detail']}", flush=True)
    report = {"device": str(device), "jax": jax.__version__, "jaxlib": jaxlib.__version__, "emitted_with": saved["emitted_with"],
              "executed_by": "jaxlib's XLA:GPU with the legacy entry points registered for CUDA (api_version 2); torch_xla's runtime not used",
              "results": results}
    out.write_text(json.dumps(report, indent=1))
    del libraries
    return 0 if results and all(r["ok"] for r in results) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    emit_parser = sub.add_parser("emit", help="lower every cuda template's torch op with torch_xla (CPU) and save the programs")
    emit_parser.add_argument("--out", type=Path, required=True)
    emit_parser.add_argument("--workdir", type=Path, default=Path("/tmp/xlacc-torch-xla-programs"))
    run_parser = sub.add_parser("run", help="run saved programs through jaxlib on the GPU and compare with the reference")
    run_parser.add_argument("--programs", type=Path, required=True)
    run_parser.add_argument("--workdir", type=Path, required=True)
    run_parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "emit":
        args.workdir.mkdir(parents=True, exist_ok=True)
        emit(args.out, args.workdir)
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    return run(args.programs, args.workdir, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
