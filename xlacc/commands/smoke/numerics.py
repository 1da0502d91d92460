"""Compare a custom call's outputs with the reference's: tolerances by dtype, errors and where.

Runs in the harness (child) process; needs NumPy (and ml_dtypes for bf16 arrays, as jax does).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from xlacc.spec import DTYPE_INFO
from xlacc.spec import TOLERANCES as SPEC_TOLERANCES

# (rtol, atol) by NumPy dtype name: the one table of xlacc.spec, which the generated tests use too.
TOLERANCES: dict[str, tuple[float, float]] = {DTYPE_INFO[name]["numpy"]: tol for name, tol in SPEC_TOLERANCES.items()}
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def tolerance(dtype: str, rtol: float | None = None, atol: float | None = None) -> tuple[float, float]:
    """The dtype's tolerances, each replaced by the user's value where one is given."""
    default_rtol, default_atol = TOLERANCES.get(dtype, (0.0, 0.0))
    return (default_rtol if rtol is None else rtol, default_atol if atol is None else atol)


def widen(array: Any) -> np.ndarray:
    """Floating arrays as float64 (the reference's precision); integers unchanged."""
    array = np.asarray(array)
    return array.astype(np.float64) if array.dtype.name in FLOAT_DTYPES else array


@dataclass(frozen=True)
class Comparison:
    ok: bool
    detail: str
    max_abs: float
    max_rel: float


def compare(label: str, actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None) -> Comparison:
    """``actual`` (the custom call's output) against ``expected`` (the reference, any precision)."""
    actual = np.asarray(actual)
    not_numbers = _not_numbers(expected)
    if not_numbers:
        return Comparison(False, f"{label}: the reference returned {not_numbers}, not an array of numbers", np.inf, np.inf)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return Comparison(False, f"{label}: shape {actual.shape} but the reference gives {expected.shape}", np.inf, np.inf)
    compared = _compare_values(label, actual, expected, rtol, atol)
    if not compared.ok and actual.dtype.kind in "fc" and expected.dtype.kind in "biu":
        return replace(compared, detail=f"the reference gives {expected.dtype.name} for a {actual.dtype.name} output; {compared.detail}")
    return compared


def _compare_values(label: str, actual: np.ndarray, expected: np.ndarray, rtol: float | None, atol: float | None) -> Comparison:
    rtol, atol = tolerance(actual.dtype.name, rtol, atol)
    got, want = widen(actual).astype(np.float64), widen(expected).astype(np.float64)
    if got.size == 0:
        return Comparison(True, f"{label}: empty", 0.0, 0.0)
    abs_err, rel_err = _errors(got, want)
    bad = abs_err > atol + rtol * np.abs(np.where(np.isfinite(want), want, 0.0))
    worst_abs, worst_rel = int(np.argmax(abs_err)), int(np.argmax(rel_err))
    summary = (
        f"{label} {actual.dtype.name}: max abs err {abs_err.flat[worst_abs]:.3g} at {_where(worst_abs, got.shape)}"
        f" (got {got.flat[worst_abs]:.7g}, want {want.flat[worst_abs]:.7g}),"
        f" max rel err {rel_err.flat[worst_rel]:.3g} at {_where(worst_rel, got.shape)}; rtol={rtol:g} atol={atol:g}"
    )
    if not np.isfinite(want).any() and not np.isfinite(got).any():
        return Comparison(False, f"{label}: every element is NaN or infinite in both the op and the reference, which proves nothing: "
                          f"make example_inputs give values the reference computes finitely; {summary}", float(abs_err.max()), float(rel_err.max()))
    if _writes_zeros(got, want):
        return Comparison(False, f"{label}: every output is zero, the reference is not; {summary}", float(abs_err.max()), float(rel_err.max()))
    count = int(bad.sum())
    if count:
        return Comparison(False, f"{count} of {got.size} elements outside tolerance; {summary}", float(abs_err.max()), float(rel_err.max()))
    return Comparison(True, summary, float(abs_err.max()), float(rel_err.max()))


NOT_NUMBER_KINDS = "OSUMm"  # objects, strings, dates; bfloat16 and the like (kind V) are numbers


def _not_numbers(value: Any) -> str | None:
    """What a reference returned instead of numbers (None, a string, a dict...), named; None when numbers."""
    if value is None or isinstance(value, (str, bytes, dict)):
        return type(value).__name__
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError):  # ragged, or not convertible at all
        return type(value).__name__
    return type(value).__name__ if kind in NOT_NUMBER_KINDS else None


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Absolute and relative error per element; a NaN or infinity that differs counts as infinite."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(got - want)
        same_special = (np.isnan(got) & np.isnan(want)) | (np.isinf(want) & (got == want))
        diff = np.where(same_special, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(want != 0, diff / np.abs(want), np.where(diff == 0, 0.0, np.inf))
        rel = np.where(same_special, 0.0, rel)
    return diff, rel


def _writes_zeros(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.all(got == 0) and np.any(want != 0))


def _where(flat_index: int, shape: tuple[int, ...]) -> str:
    index = np.unravel_index(flat_index, shape) if shape else ()
    return "[" + ", ".join(str(int(i)) for i in index) + "]"
