"""A run ranked with its program's code: the code finding whose cause explains the error the run
printed first, the code's other findings after it, as "also in the code"."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import ARTIFACTS_DIR, REPO_DIR
from needs import needs_jax

from xlacc.commands.doctor.rules import run
from xlacc.ground.catalogue import make
from xlacc.ground.report import rank

RUNS = ARTIFACTS_DIR / "doctor" / "runs"
LOOKUP = "`No registered implementation for untyped custom call to simple_add for Host`"


def lookup_failure_guesses():
    return [make("target-not-registered", LOOKUP, likelihood=0.6), make("api-version-mismatch", LOOKUP, likelihood=0.45),
            make("platform-name", LOOKUP, likelihood=0.35)]


def test_a_failed_lookup_is_explained_by_the_registration_not_by_a_call_with_wrong_arguments():
    platform = make("platform-name", 'run.py:11: registers for "GPU"', likelihood=0.8)
    arity = make("api-version-mismatch", "run.py:13: `SimpleAdd` takes api_version 1, not 2: XLA passes one more argument", likelihood=0.9)
    ranked = rank(run.rank_with_code(lookup_failure_guesses(), [arity, platform], 1))
    assert ranked[0].code == "platform-name" and "the code says why" in ranked[0].evidence
    mismatch = next(f for f in ranked if f.evidence.startswith("also in the code: run.py:13"))
    assert ranked.index(mismatch) > ranked.index(next(f for f in ranked if f.code == "target-not-registered"))


def test_a_registry_mismatch_does_explain_a_failed_lookup():
    registry = make("api-version-mismatch", "run.py:13: run.py:9 registers it as typed FFI (api_version=1), but api 2 looks in "
                    "the legacy registry", likelihood=0.9)
    ranked = rank(run.rank_with_code(lookup_failure_guesses(), [registry], 1))
    assert ranked[0] is not None and ranked[0].code == "api-version-mismatch" and "the code says why" in ranked[0].evidence


def test_without_an_explained_message_nothing_is_set_apart():
    code = [make("hardcoded-size", "k.cc", likelihood=0.8)]
    assert not any(f.evidence.startswith("also in the code") for f in run.rank_with_code([], code, 1))


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    folder = tmp_path_factory.mktemp("runs")
    for path in RUNS.iterdir():
        shutil.copy(path, folder)
    subprocess.run([compiler, "-shared", "-fPIC", "kernel.cc", "-o", "libsimple_add.so"], cwd=folder, check=True, capture_output=True)
    return folder


@needs_jax
def test_a_cpu_function_registered_for_gpu_and_called_with_the_wrong_api_version_names_the_platform_first(run_folder):
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "doctor", "--json", "--", sys.executable, "run_platform_api.py", "./libsimple_add.so"],
        cwd=run_folder, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(REPO_DIR), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert findings[0]["code"] == "platform-name" and 'registers for "GPU"' in findings[0]["evidence"]
    mismatch = next(f for f in findings if f["code"] == "api-version-mismatch" and "run_platform_api.py:13" in f["evidence"])
    assert mismatch["evidence"].startswith("also in the code: ")
