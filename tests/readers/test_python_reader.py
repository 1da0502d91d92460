"""xlacc.readers.python.reader: the same facts whatever Python version the code is written for,
and whatever Python runs the reader."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from xlacc.readers.python import read, relevant

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
CPU_SECONDS_PER_FILE = 0.5
# Written for Python 3.12 and 3.14: a registration and a call among syntax that `ast` of 3.10/3.11 refuses.
MODERN = textwrap.dedent(
    """
    import ctypes
    import jax
    type Platform = str
    PLATFORM: Platform = "CUDA"
    lib = ctypes.CDLL("./libop.so")
    def register[T](n: T) -> None:
        for dtype in ("f32", "f64"):
            jax.ffi.register_ffi_target(f"op_{dtype}", jax.ffi.pycapsule(lib.Op), platform=PLATFORM)
    def call(x, dtype):
        match dtype:
            case "f32" | "f64":
                label = t"op {dtype}"
                return jax.ffi.ffi_call(f"op_{dtype}", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, n=3)
    """
)
# The same code in Python 3.8 syntax, line for line.
CLASSIC = (
    MODERN.replace("type Platform = str", "Platform = str")
    .replace("def register[T](n: T)", "def register(n)")
    .replace("        match dtype:\n            case \"f32\" | \"f64\":\n", "        if True:\n            if dtype in ('f32', 'f64'):\n")
    .replace('t"op {dtype}"', 'f"op {dtype}"')
)


def as_json(facts) -> str:
    return json.dumps(dataclasses.asdict(facts), default=sorted, sort_keys=True)


def test_code_for_python_3_12_gives_the_facts_of_the_same_code_in_older_syntax():
    modern, classic = read("ops.py", MODERN), read("ops.py", CLASSIC)
    assert modern.syntax_error is None
    assert [(r.target_pattern, r.platforms, r.symbols) for r in modern.registrations] == [("op_(?:f32|f64)", ("CUDA",), {"Op"})]
    assert [(c.target_pattern, c.attrs, c.operands) for c in modern.calls] == [("op_.*", ("n",), ("x",))]
    modern_calls = [dataclasses.replace(c, text="") for c in modern.calls]
    classic_calls = [dataclasses.replace(c, text="") for c in classic.calls]
    assert modern_calls == classic_calls and modern.registrations == classic.registrations
    assert (modern.symbol_refs, modern.libraries, modern.imports) == (classic.symbol_refs, classic.libraries, classic.imports)


def _other_pythons() -> list[str]:
    """Interpreters other than this one to read with: $XLACC_OTHER_PYTHONS (os.pathsep-separated),
    else python3.10 on PATH."""
    named = [p for p in os.environ.get("XLACC_OTHER_PYTHONS", "").split(os.pathsep) if p]
    found = named or [p for p in [shutil.which("python3.10")] if p]
    usable = []
    for python in found:
        probe = subprocess.run([python, "-c", "import tree_sitter, tree_sitter_python"], capture_output=True, check=False)
        if probe.returncode == 0:
            usable.append(python)
    return usable


@pytest.mark.parametrize("source", [MODERN, CLASSIC], ids=["python-3.12-code", "python-3.8-code"])
def test_another_interpreter_reads_the_same_facts(source, tmp_path):
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no other Python with tree-sitter-python (set XLACC_OTHER_PYTHONS, or put python3.10 on PATH)")
    script = tmp_path / "read.py"
    script.write_text(
        "import dataclasses, json, sys\nfrom xlacc.readers.python import read\n"
        "facts = read('ops.py', sys.stdin.read())\n"
        "print(json.dumps(dataclasses.asdict(facts), default=sorted, sort_keys=True))\n"
    )
    for python in pythons:
        done = subprocess.run(
            [python, str(script)], input=source, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == as_json(read("ops.py", source)), python


def test_each_corpus_file_reads_in_under_half_a_cpu_second():
    read("warm.py", "import jax\n")  # the grammar loads once per process
    for path in sorted(CORPUS.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if not relevant(text):
            continue
        start = time.process_time()
        facts = read(str(path), text)
        spent = time.process_time() - start
        assert facts.syntax_error is None, path
        assert spent < CPU_SECONDS_PER_FILE, f"{path}: {spent:.3f} s of CPU"
