"""Text rules: the reference's error texts and their variants, several causes ranked, crashes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from locations import ARTIFACTS_DIR, REPO_DIR

from xlacc.commands.doctor.rules import error_text as text
from xlacc.commands.doctor.rules.run import diagnose_output, signal_name

ARTIFACTS = ARTIFACTS_DIR / "doctor"
LOGS = sorted((ARTIFACTS / "logs").glob("*.log"))
CLEAN_LOGS = sorted((ARTIFACTS / "logs" / "clean").glob("*.log"))
LEGACY_CAUSES = ["target-not-registered", "api-version-mismatch", "platform-name", "ld-preload"]
MESSAGE = "No registered implementation for custom call to {target} for platform CUDA"


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def ranked(findings):
    return sorted(findings, key=lambda f: -f.likelihood)


# -- the legacy lookup and its variants ---------------------------------------------------------

VARIANTS = {
    "plain": "UNIMPLEMENTED: " + MESSAGE,
    "traceback": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    y = f(x)\n"
    "jaxlib.xla_extension.XlaRuntimeError: UNIMPLEMENTED: " + MESSAGE,
    "bad statusor": "RuntimeError: Bad StatusOr access: UNIMPLEMENTED: " + MESSAGE,
    "glog prefix": "E1122 10:00:00.123 123 custom_call.cc:88] " + MESSAGE,
    "tf prefix": "2025-11-22 10:00:00.123456: E external/xla/xla/service/custom_call.cc:88] " + MESSAGE,
    "python logging": "ERROR:root:" + MESSAGE,
    "pytest": "E       RuntimeError: No registered implementation for custom call\nE       to {target} for platform\nE       CUDA",
    "wrapped at spaces": "RuntimeError: No registered\nimplementation for custom call to {target}\nfor platform CUDA",
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("target", ["XlaGpuSimpleAdd", "paged_attention.v2", "my-op_3"])
def test_legacy_lookup_variants_name_the_target_and_all_causes(variant, target):
    findings = ranked(text.diagnose_text(VARIANTS[variant].replace("{target}", target)))
    assert codes(findings) == LEGACY_CAUSES
    for finding in findings:
        assert f"target: `{target}` (platform CUDA)" in finding.evidence
    assert target in findings[0].title


def test_causes_are_ranked_and_each_says_how_to_tell_it_apart():
    findings = text.diagnose_text(MESSAGE.format(target="op"))
    likelihoods = [f.likelihood for f in findings]
    assert likelihoods == sorted(likelihoods, reverse=True) and len(set(likelihoods)) == len(likelihoods)
    tells = [f.evidence.splitlines()[-1] for f in findings]
    assert len(set(tells)) == len(tells)
    assert "api_version=0" in tells[1] and "\"GPU\"" in tells[2] and "LD_PRELOAD" in tells[3]


def test_host_text_from_xla_cpu():
    findings = text.diagnose_text("NOT_FOUND: No registered implementation for untyped custom call to my_missing_op for Host")
    assert codes(findings) == LEGACY_CAUSES
    assert "target: `my_missing_op` (platform Host)" in findings[0].evidence


def test_terminal_cut_inside_words_is_glued_back():
    width = 50
    message = "2025-11-22 10:00:00.123456: E external/xla/x.cc:3077] Execution failed: UNIMPLEMENTED: " + MESSAGE.format(target="XlaGpuSimpleAdd")
    cut = "\n".join(message[i : i + width] for i in range(0, len(message), width))
    findings = text.diagnose_text(cut)
    assert findings[0].code == "target-not-registered"
    assert "target: `XlaGpuSimpleAdd` (platform CUDA)" in findings[0].evidence


def test_a_word_cut_without_a_terminal_width_is_found_by_the_glued_pass():
    findings = text.diagnose_text("No registered imple\nmentation for custom call to my_op for platform CUDA")
    assert findings[0].code == "target-not-registered" and "`my_op`" in findings[0].evidence


def test_normalize_strips_prefixes_and_joins_lines():
    normalized = text.normalize("E1122 10:00:00.123 123 a.cc:88] first half\nE       second half\n[ERROR] third")
    assert normalized.spaced == "first half second half third"
    assert normalized.glued == "first halfsecond halfthird"


def test_ffi_lookup_lists_header_skew_last():
    findings = ranked(text.diagnose_text("NOT_FOUND: No FFI handler registered for my_rms_norm on a platform CUDA (canonical cuda)"))
    assert codes(findings) == ["target-not-registered", "api-version-mismatch", "platform-name", "ffi-api-skew"]
    assert "register it with api_version=1" in findings[1].evidence


def test_repeated_message_reports_each_cause_once():
    from xlacc.ground.report import rank

    line = "E1122 10:00:00.123 1 a.cc:1] " + MESSAGE.format(target="op")
    findings = rank(text.diagnose_text("\n".join([line, "F1122 10:00:00.124 1 s.cc:33] Bad StatusOr access: " + MESSAGE.format(target="op")])))
    assert codes(findings) == LEGACY_CAUSES


@pytest.mark.parametrize(
    "message, code, detail",
    [
        ("[execute] Wrong number of arguments: expected 2 but got 1", "operand-mismatch", "passes 1 operands, the handler binds 2"),
        ("[execute] Wrong number of results: expected 1 but got 2", "result-mismatch", "asks for 2 results, the handler binds 1"),
        ("[execute] Wrong number of attributes: expected 1 but got 0", "backend-config-invalid", "passes 0 attributes"),
        ("Custom call API version `API_VERSION_ORIGINAL` is not supported by XLA:GPU. It will be fully removed in November 2025. Custom call target: my_op",
         "legacy-api-deprecated", "`my_op` uses the deprecated API_VERSION_ORIGINAL on XLA:GPU"),
        ("Unknown custom-call API version enum value: 0 (API_VERSION_UNSPECIFIED)", "api-version-invalid", "api_version 0"),
        ("RuntimeError: RegisterCustomCall not implemented", "torch-xla-no-cuda", "cannot register"),
        ("INTERNAL: launch failed: no kernel image is available for execution on the device", "arch-mismatch", "no GPU code"),
    ],
)
def test_reference_texts(message, code, detail):
    findings = text.diagnose_text(message)
    assert findings[0].code == code and detail in findings[0].title + findings[0].evidence


def test_decode_error_with_dtype_diagnostic():
    findings = ranked(text.diagnose_text(
        "INVALID_ARGUMENT: [execute] Failed to decode all FFI handler operands (bad operands at: 1)\nDiagnostics:\nWrong buffer dtype: expected F32 but got S32"
    ))
    assert codes(findings) == ["operand-mismatch", "result-mismatch"]
    assert "dtype is S32, the handler expects F32" in findings[0].title


def test_decode_error_without_diagnostic_lists_all_three():
    findings = ranked(text.diagnose_text("[execute] Failed to decode all FFI handler operands (bad operands at: 2)"))
    assert codes(findings) == ["operand-mismatch", "result-mismatch", "backend-config-invalid"]


def test_attribute_decode_error_is_not_blamed_on_operands():
    findings = text.diagnose_text(
        "[execute] Failed to decode all FFI handler operands (bad operands at: 2)\nDiagnostics:\nAttribute name mismatch: t vs s"
    )
    assert codes(findings) == ["backend-config-invalid"]


def test_dlopen_missing_path_vs_bare_name():
    by_path = ranked(text.diagnose_text("OSError: ./build/libop.so: cannot open shared object file: No such file or directory"))
    assert codes(by_path) == ["library-not-found", "dependency-missing"]
    bare = ranked(text.diagnose_text("OSError: libcudart.so.12: cannot open shared object file: No such file or directory"))
    assert codes(bare) == ["dependency-missing", "library-not-found"]


def test_load_time_undefined_status_symbol_gets_the_weak_fix():
    findings = text.diagnose_text("OSError: ./libop.so: undefined symbol: XlaCustomCallStatusSetFailure")
    assert codes(findings) == ["dependency-missing"] and "__attribute__((weak))" in findings[0].fix
    other = text.diagnose_text("OSError: ./libop.so: undefined symbol: cublasCreate_v2")
    assert codes(other) == ["dependency-missing"] and "weak" not in other[0].fix


def test_torch_xla_abi_error_is_not_a_missing_dependency():
    findings = text.diagnose_text("ImportError: /x/_XLAC.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZNK3c1010TensorImpl4sizeEv")
    assert codes(findings) == ["torch-xla-version-mismatch"]


def test_hlo_without_custom_call_is_folded_away_and_with_one_is_not():
    folded = (ARTIFACTS / "sources/zeros_like.hlo").read_text()
    assert codes(text.diagnose_text(folded)) == ["op-optimized-away"]
    kept = (ARTIFACTS / "sources/clean/custom_call.hlo").read_text()
    assert text.diagnose_text(kept) == []
    assert text.diagnose_text(folded, hlo=False) == []


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_positive_log_yields_a_finding(log):
    assert text.diagnose_text(log.read_text())


@pytest.mark.parametrize("log", CLEAN_LOGS, ids=lambda p: p.name)
def test_clean_logs_yield_nothing(log):
    assert text.diagnose_text(log.read_text()) == []


def test_every_rule_matches_some_artifact():
    corpus = [text.normalize(p.read_text()) for p in LOGS]
    for rule, spaced, glued in text._compiled():
        assert any(spaced.search(n.spaced) or glued.search(n.glued) for n in corpus), f"no artifact for rule {rule.name}"


# -- diagnose_output: text plus the way the process ended ---------------------------------------


@pytest.mark.parametrize(
    "returncode, name", [(-11, "SIGSEGV"), (139, "SIGSEGV"), (-6, "SIGABRT"), (134, "SIGABRT"), (137, "SIGKILL"), (0, None), (1, None), (2, None), (None, None)]
)
def test_signal_names(returncode, name):
    assert signal_name(returncode) == name


def test_diagnose_output_adds_kernel_crash_for_a_signal():
    findings = diagnose_output("registering my_op\n", -11)
    assert codes(findings) == ["kernel-crash"]
    assert "SIGSEGV" in findings[0].title and "registered as typed FFI" in findings[0].fix
    assert diagnose_output("all good\n", 0) == []
    assert codes(diagnose_output("[execute] Wrong number of arguments: expected 2 but got 1", 1)) == ["operand-mismatch"]


def test_diagnose_output_imports_nothing_heavy():
    code = (
        "import sys, xlacc.commands.doctor.rules.run\n"
        "xlacc.commands.doctor.rules.run.diagnose_output('x', -11)\n"
        "print(sorted(m for m in ('jax', 'jaxlib', 'torch', 'torch_xla', 'elftools', 'rich', 'typer', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_DIR)
    assert done.stdout.strip() == "[]", done.stderr


# -- torchax ----------------------------------------------------------------------------------------

TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 39.59 GiB. GPU 0 has a total capacity of 79.18 GiB "
    "of which 19.25 GiB is free. Including non-PyTorch memory, this process has 59.92 GiB memory in use. Of the "
    "allocated memory {torch} is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."
)


def test_torch_oom_blames_jax_only_when_pytorch_holds_next_to_nothing():
    blamed = text.diagnose_text(TORCH_OOM.format(torch="0 bytes"))
    assert codes(blamed) == ["jax-preallocation"] and "PyTorch only 0 bytes" in blamed[0].title
    assert codes(text.diagnose_text(TORCH_OOM.format(torch="58.20 GiB"))) == []


def test_a_missing_lowering_is_told_from_code_outside_the_environment_by_the_library_frames():
    message = "AssertionError: torchax Tensors can only do math within the torchax environment.Please wrap your code"
    inside = ranked(text.diagnose_text('  File "/x/torch/_library/autograd.py", line 111, in autograd_impl\n' + message))
    outside = ranked(text.diagnose_text('  File "model.py", line 3, in <module>\n' + message))
    assert codes(inside) == ["torchax-no-lowering", "torchax-mixed-tensors"]
    assert codes(outside) == ["torchax-mixed-tensors", "torchax-no-lowering"]
