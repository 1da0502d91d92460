"""Registration and call: what run-smoke's jax harness saw in jax's registries and the lowered
program, judged against the project's spec, in the harness's words."""

from __future__ import annotations

import pytest
from smoke_support import new_project

from xlacc import spec as specmod
from xlacc.commands.doctor.inputs import SourceFile
from xlacc.commands.doctor.rules import registration
from xlacc.ground.catalogue import BY_CODE, WORDINGS
from xlacc.readers import hlo
from xlacc.readers.python import read

JAX = "run-smoke jax"


@pytest.fixture(scope="module")
def ffi_cuda(tmp_path_factory):
    return specmod.load(new_project(tmp_path_factory.mktemp("registration"), "add_ffi_cuda", platform="cuda", api="ffi"))


def test_registering_as_the_spec_says_is_no_finding(ffi_cuda):
    assert registration.jax_registration(ffi_cuda, "CUDA", 1, JAX) == []
    assert registration.jax_registration(ffi_cuda, "gpu", 1, JAX) == []


def test_a_platform_jax_keeps_pending_in_the_harness_words(ffi_cuda):
    [finding] = registration.jax_registration(ffi_cuda, "GPU", 1, JAX)
    assert finding.code == "platform-name"
    assert "a cuda project must register for 'CUDA' or 'gpu'; jax queues 'GPU'" in finding.evidence
    assert (finding.title, finding.fix) == (WORDINGS[JAX]["platform-name"].title, WORDINGS[JAX]["platform-name"].fix)


def test_an_api_version_jax_refuses_and_the_other_registry(ffi_cuda):
    [invalid] = registration.jax_registration(ffi_cuda, "CUDA", 4, JAX)
    assert invalid.code == "api-version-invalid" and "jax takes api_version 1 (typed FFI) or 0 (legacy)" in invalid.evidence
    [mismatch] = registration.jax_registration(ffi_cuda, "CUDA", 0, JAX)
    assert mismatch.code == "api-version-mismatch"
    assert "puts the typed FFI entry point into the legacy registry" in mismatch.evidence


def test_pending_registrations_for_no_backend():
    found = registration.jax_pending("my_add", "GPU", "my_add", JAX)
    assert found.code == "platform-name" and "target 'my_add' is queued for platform 'GPU'" in found.evidence
    assert "an FFI type id" in registration.jax_pending("my_add", "gpu_typo", None, JAX).evidence
    assert registration.jax_pending("my_add", "CUDA", "my_add", JAX) is None  # a live platform
    assert registration.jax_pending("my_add", "GPU", "someone_else", JAX) is None  # not this project's


def test_registered_as_the_other_kind(ffi_cuda):
    assert registration.registered_kind(ffi_cuda, "CUDA", "typed FFI", JAX) is None
    found = registration.registered_kind(ffi_cuda, "CUDA", "legacy", JAX)
    assert found.code == "api-version-mismatch" and "registered for CUDA as legacy" in found.evidence


def test_not_registered_names_where_it_was_queued():
    found = registration.not_registered("my_add", "CUDA", ["GPU"], JAX)
    assert found.code == "target-not-registered"
    assert found.evidence == "after register(), 'my_add' is not in XLA's CUDA registry (queued for 'GPU')"


def test_a_call_lowered_with_another_api_version():
    line = 'ROOT %r = f32[8]{0} custom-call(f32[8]{0} %p), custom_call_target="my_add", api_version=API_VERSION_STATUS_RETURNING_UNIFIED'
    [call] = hlo.hlo_custom_calls(line)
    assert registration.called_with(call, call.api_version, JAX) is None
    found = registration.called_with(call, 4, "run-smoke torch-xla", where=None)
    assert found.code == "api-version-mismatch" and found.evidence == line
    assert registration.called_with(call, 4, JAX, where="compiled HLO", shown=10).evidence == f"compiled HLO: {line[:10]}"


def test_without_a_context_the_catalogue_words_it():
    found = registration.not_registered("my_add", "Host", [], None)
    assert (found.title, found.fix) == (BY_CODE["target-not-registered"].title, BY_CODE["target-not-registered"].fix)


# -- what doctor reads in Python ------------------------------------------------------------------


def python_facts(source: str):
    return read("op.py", source)


def test_a_python_registration_for_a_misspelt_platform_and_a_refused_api_version():
    facts = python_facts('import jax\njax.ffi.register_ffi_target("my_add", cap, platform="GPU", api_version=4)\n')
    [reg] = facts.registrations
    found = registration.python_registration("op.py:2", reg)
    assert [f.code for f in found] == ["platform-name", "api-version-invalid"]
    assert found[0].evidence.startswith('op.py:2: `jax.ffi.register_ffi_target(') and 'registers for "GPU"' in found[0].evidence


def test_a_python_call_with_the_deprecated_api_version():
    facts = python_facts('import jax\njax.ffi.ffi_call("my_add", out, custom_call_api_version=1)(x)\n')
    [call] = facts.calls
    [found] = registration.python_call("op.py:2", call)
    assert found.code == "legacy-api-deprecated" and "calls with api_version 1 (API_VERSION_ORIGINAL)" in found.evidence


def test_preloading_the_ops_library_registers_nothing():
    script = SourceFile("run.sh", "sh", "LD_PRELOAD=./build/libop.so python train.py\n", "run.sh", line_offset=10)
    [found] = registration.ld_preload(script)
    assert found.code == "ld-preload" and found.evidence.startswith("run.sh:11: `LD_PRELOAD=./build/libop.so`")
    assert registration.ld_preload(SourceFile("run.sh", "sh", "LD_PRELOAD=libjemalloc.so python t.py\n", "run.sh")) == []
