"""How a command words a catalogue code in its own situation: run-smoke's harnesses measured what
they report, so their titles and fixes say what they saw."""

from __future__ import annotations

from dataclasses import dataclass

from xlacc.ground.report import Severity

@dataclass(frozen=True)
class Wording:
    """How one command words a catalogue code in its own situation; severity None keeps the catalogue's."""

    title: str
    fix: str
    severity: Severity | None = None


# What run-smoke's harnesses say when they see a code themselves (they measured it, so their
# findings are sure where doctor's rules guess: op-optimized-away is an error there).
WORDINGS: dict[str, dict[str, Wording]] = {
    "run-smoke jax": {
        "platform-name": Wording(
            "JAX queued a registration for a platform that never appears",
            'register with platform="CUDA" (or "gpu") for a GPU kernel and "cpu" for a CPU one: '
            "jax.ffi.register_ffi_target accepts any string and keeps the others pending, so XLA never sees the target",
        ),
        "target-not-registered": Wording(
            "the target is not registered where XLA looks for it",
            "call register() before the first call, with the project's platform and the registry that matches the "
            "call's api_version (typed FFI: register api_version=1, call 4; legacy: register api_version=0, call 2 on GPU / 3 on CPU)",
        ),
        "api-version-mismatch": Wording(
            "the target sits in one registry and is called through the other",
            "a typed FFI handler (XLA_FFI_DEFINE_HANDLER_SYMBOL) registers with api_version=1 and is called with api_version 4; "
            "a legacy entry point registers with api_version=0 and is called with 2 (GPU) or 3 (CPU)",
        ),
        "op-optimized-away": Wording(
            "the op runs without the custom call",
            "call jax.ffi.ffi_call with the target and make the op's result depend on it; a call with no results "
            "needs has_side_effect=True or XLA removes it as dead code",
            severity="error",
        ),
        "api-version-invalid": Wording(
            "register_ffi_target was given an api_version it does not take",
            "set REGISTER_API_VERSION in NAME/jax.py to jax's own scale: 1 for a typed FFI handler, 0 for a legacy "
            "entry point (the HLO numbers 2-4 belong to API_VERSION, the call's)",
        ),
        "no-gpu": Wording(
            "execution needs a GPU",
            "run `xlacc run-smoke` where jax sees an NVIDIA GPU (pip install 'jax[cuda13]') to run numerics and --bench",
        ),
    },
    "run-smoke torch-xla": {
        "torch-xla-no-cuda": Wording(
            "this torch_xla cannot run a custom call itself",
            "torch_xla 2.9 (PyPI) has no CUDA backend and no custom-call registration; XLA:CUDA was removed in 2.9. "
            "Run a PyTorch model with this op on the GPU through torchax (`--framework torchax`: the same torch op), "
            "or through JAX; torch_xla's emitted program is checked through jaxlib",
        ),
        "op-optimized-away": Wording(
            "the op lowers without the custom call",
            "the op's XLA implementation must return the outputs of torch_xla._XLAC._xla_custom_call; "
            "a constant such as torch.zeros_like(x) is folded and the kernel never runs",
            severity="error",
        ),
        "api-version-mismatch": Wording(
            "the custom call's api_version does not fit the legacy entry point",
            "torch_xla calls legacy entry points only: api_version 2 (API_VERSION_STATUS_RETURNING) on cuda, "
            "3 (API_VERSION_STATUS_RETURNING_UNIFIED) on cpu, where only 3 passes backend_config",
        ),
        "backend-config-invalid": Wording(
            "backend_config is not what the entry point parses",
            "pass NAME.backend_config(...) (`key=value` pairs joined by ';') as _xla_custom_call's 6th argument",
        ),
        "hardcoded-size": Wording(
            "backend_config does not follow the operands' sizes",
            "legacy entry points read sizes from backend_config: put every shape in it, never a constant",
        ),
        "operand-mismatch": Wording(
            "the custom call's operands are not the spec's inputs in order",
            "pass the inputs to _xla_custom_call in the order of [[inputs]] in xlacc.toml: buffers[i] in the kernel is operand i",
        ),
        "result-mismatch": Wording(
            "the custom call's result shapes or dtypes differ from the reference's",
            "give _xla_custom_call one shape and one torch.dtype per [[outputs]] entry, as the reference computes them",
        ),
    },
}
