"""The pieces run-smoke's checks are made of: reading custom calls out of HLO and StableHLO text
(lines as jax 0.10.2 and torch_xla 2.9 print them), and comparing outputs with tolerances."""

from __future__ import annotations

import numpy as np
import pytest

from xlacc.commands.smoke import numerics
from xlacc.commands.smoke.harness_torch_xla import _tag_opcode
from xlacc.readers import hlo

# -- HLO ------------------------------------------------------------------------------------------

JAX_COMPILED_FFI = (
    '  ROOT %ffi_call.1 = f32[5]{0} custom-call(%a.1, %b.1), custom_call_target="add_ffi", '
    "operand_layout_constraints={f32[5]{0}, f32[5]{0}}, api_version=API_VERSION_TYPED_FFI, "
    'metadata={op_name="jit(<lambda>)/ffi_call" stack_frame_id=2}, backend_config={}'
)
JAX_COMPILED_LEGACY = (
    '  ROOT %ffi_call.1 = f32[5]{0} custom-call(%a.1, %b.1), custom_call_target="add_leg", '
    "operand_layout_constraints={f32[5]{0}, f32[5]{0}}, api_version=API_VERSION_STATUS_RETURNING_UNIFIED, "
    'metadata={op_name="jit(<lambda>)/ffi_call" stack_frame_id=2}, backend_config="n=5"'
)
TORCH_XLA_HLO = """HloModule IrToHlo.14, entry_computation_layout={(f32[4,3]{1,0}, f32[3]{0})->((f32[4,3]{1,0}, f32[4]{0}))}

ENTRY %IrToHlo.14 (p0.1: f32[4,3], p1.2: f32[3]) -> ((f32[4,3], f32[4])) {
  %p1.2 = f32[3]{0} parameter(1)
  %abs.4 = f32[3]{0} abs(f32[3]{0} %p1.2)
  %convert.5 = f32[3]{0} convert(f32[3]{0} %abs.4)
  %p0.1 = f32[4,3]{1,0} parameter(0)
  %negate.3 = f32[4,3]{1,0} negate(f32[4,3]{1,0} %p0.1)
  %custom-call.6 = (f32[4,3]{1,0}, f32[4]{0}) custom-call(f32[4,3]{1,0} %negate.3, /*index=1*/f32[3]{0} %convert.5), custom_call_target="rms", api_version=API_VERSION_STATUS_RETURNING, backend_config="x.shape=4,3;w.shape=3;eps=1e-06"
  %get-tuple-element.7 = f32[4,3]{1,0} get-tuple-element((f32[4,3]{1,0}, f32[4]{0}) %custom-call.6), index=0
  ROOT %tuple.8 = (f32[4,3]{1,0}) tuple(f32[4,3]{1,0} %get-tuple-element.7)
}
"""


def test_hlo_custom_call_typed_ffi_from_jax():
    (call,) = hlo.hlo_custom_calls(JAX_COMPILED_FFI)
    assert call.target == "add_ffi"
    assert call.api_version == 4
    assert call.backend_config == "{}"
    assert call.operands == ("a.1", "b.1")
    assert call.result_shape == "f32[5]{0}"


def test_hlo_custom_call_legacy_keeps_its_backend_config():
    (call,) = hlo.hlo_custom_calls(JAX_COMPILED_LEGACY)
    assert (call.target, call.api_version, call.backend_config) == ("add_leg", 3, "n=5")


def test_hlo_custom_call_from_torch_xla_with_tuple_result_and_index_comments():
    (call,) = hlo.hlo_custom_calls(TORCH_XLA_HLO)
    assert call.target == "rms" and call.api_version == 2
    assert call.operands == ("negate.3", "convert.5")
    assert call.operand_shapes == ("f32[4,3]{1,0}", "f32[3]{0}")
    assert call.result_shape == "(f32[4,3]{1,0}, f32[4]{0})"
    assert hlo.parse_backend_config(call.backend_config) == {"x.shape": "4,3", "w.shape": "3", "eps": "1e-06"}


def test_hlo_without_api_version_is_original_and_escapes_are_read():
    line = r'  %cc = f32[2]{0} custom-call(f32[2]{0} %p), custom_call_target="t", backend_config="say \"hi\""'
    (call,) = hlo.hlo_custom_calls(line)
    assert call.api_version == hlo.DEFAULT_API_VERSION == 1
    assert call.backend_config == 'say "hi"'


JAX_COMPILED_IN_PLACE = (
    "  ROOT %ffi_call.3 = (f32[5,16,2,64]{3,2,1,0}, f32[5,16,2,64]{3,2,1,0}) custom-call(%key.1, %value.1, %key_cache.1, "
    '%value_cache.1, %slot_mapping.1), custom_call_target="kvw", operand_layout_constraints={f32[10,2,64]{2,1,0}, '
    "f32[10,2,64]{2,1,0}, f32[5,16,2,64]{3,2,1,0}, f32[5,16,2,64]{3,2,1,0}, s32[10]{0}}, "
    "output_to_operand_aliasing={{0}: (2, {}), {1}: (3, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}"
)
SHLO_IN_PLACE = (
    "    %0:2 = stablehlo.custom_call @kvw(%arg0, %arg1, %arg2, %arg3, %arg4) {backend_config = \"\", mhlo.backend_config = {}, "
    "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 2, operand_tuple_indices = []>, "
    "#stablehlo.output_operand_alias<output_tuple_indices = [1], operand_index = 3, operand_tuple_indices = []>]} "
    ": (tensor<10x2x64xf32>, tensor<10x2x64xf32>, tensor<5x16x2x64xf32>, tensor<5x16x2x64xf32>, tensor<10xi32>) "
    "-> (tensor<5x16x2x64xf32>, tensor<5x16x2x64xf32>)"
)


@pytest.mark.parametrize("text, read", [(JAX_COMPILED_IN_PLACE, hlo.hlo_custom_calls), (SHLO_IN_PLACE, hlo.stablehlo_custom_calls)])
def test_results_written_in_place_are_read_as_output_operand_pairs(text, read):
    (call,) = read(text)
    assert call.target == "kvw" and call.aliases == ((0, 2), (1, 3))


def test_a_single_aliased_result_has_index_zero_and_plain_calls_have_none():
    line = '  %cc = f32[2]{0} custom-call(f32[2]{0} %p), custom_call_target="t", output_to_operand_aliasing={{}: (0, {})}'
    assert hlo.hlo_custom_calls(line)[0].aliases == ((0, 0),)
    assert hlo.hlo_custom_calls(JAX_COMPILED_FFI)[0].aliases == ()


def test_hlo_with_no_custom_call():
    text = "  ROOT %add.3 = f32[4]{0} add(f32[4]{0} %p0.1, f32[4]{0} %p1.2)"
    assert hlo.hlo_custom_calls(text) == []
    assert hlo.calls_to(hlo.hlo_custom_calls(JAX_COMPILED_FFI), "other") == []


def test_operand_tags_are_found_through_converts():
    instructions = hlo.hlo_instructions(TORCH_XLA_HLO)
    tags = {"negate": 0, "abs": 1}
    assert instructions["custom-call.6"].operands == ("negate.3", "convert.5")
    assert _tag_opcode("negate.3", instructions, tags) == "negate"
    assert _tag_opcode("convert.5", instructions, tags) == "abs"
    assert _tag_opcode("p0.1", instructions, tags) is None


# -- StableHLO ------------------------------------------------------------------------------------

SHLO_LEGACY = (
    '    %0 = stablehlo.custom_call @add_leg(%arg0, %arg1) {api_version = 3 : i32, backend_config = "n=5", '
    "operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<0> : tensor<1xindex>]} "
    ": (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>"
)
SHLO_TYPED = (
    '    %0 = stablehlo.custom_call @add_ffi(%arg0, %arg1) {backend_config = "", mhlo.backend_config = '
    "{eps = 9.99999997E-7 : f32, n = 3 : i64}, operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], "
    "result_layouts = [dense<0> : tensor<1xindex>]} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>"
)
SHLO_EXPORTED = (
    "    %0 = stablehlo.custom_call @add_ffi(%arg0, %arg1) {mhlo.backend_config = {}, operand_layouts = "
    "[dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<0> : tensor<1xindex>]} "
    ": (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32> loc(#loc9)"
)


def test_stablehlo_legacy_call():
    (call,) = hlo.stablehlo_custom_calls(SHLO_LEGACY)
    assert (call.target, call.api_version, call.backend_config) == ("add_leg", 3, "n=5")
    assert call.operands == ("%arg0", "%arg1")
    assert call.result_shape == "tensor<5xf32>"


@pytest.mark.parametrize("line", [SHLO_TYPED, SHLO_EXPORTED])
def test_stablehlo_typed_ffi_is_the_mhlo_dictionary(line):
    """jax lowers typed FFI calls with the default api_version and `mhlo.backend_config = {...}`."""
    (call,) = hlo.stablehlo_custom_calls(line)
    assert call.target == "add_ffi" and call.api_version == hlo.TYPED_FFI
    assert call.backend_config.startswith("{") and call.result_shape == "tensor<5xf32>"


def test_stablehlo_quoted_target():
    line = '%0 = stablehlo.custom_call @"my.op-v2"(%arg0) {api_version = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>'
    (call,) = hlo.stablehlo_custom_calls(line)
    assert call.target == "my.op-v2" and call.api_version == 2


def test_backend_config_pairs():
    assert hlo.parse_backend_config("n=1024;eps=1e-06") == {"n": "1024", "eps": "1e-06"}
    assert hlo.parse_backend_config("") == {}
    assert hlo.parse_backend_config("{n = 3 : i64}") is None
    assert hlo.api_version_name(2) == "API_VERSION_STATUS_RETURNING"


# -- numerics -------------------------------------------------------------------------------------


def test_close_float32_passes_and_says_how_close():
    want = np.linspace(-3, 3, 101)
    got = (want * (1 + 1e-7)).astype(np.float32)
    result = numerics.compare("out", got, want)
    assert result.ok
    assert "max abs err" in result.detail and "rtol=1e-05 atol=1e-06" in result.detail
    assert 0 < result.max_abs < 1e-5


def test_one_wrong_element_fails_with_its_place():
    want = np.zeros((4, 5)) + 2.0
    got = want.astype(np.float32).copy()
    got[2, 3] = 2.5
    result = numerics.compare("out", got, want)
    assert not result.ok
    assert result.detail.startswith("1 of 20 elements outside tolerance")
    assert "max abs err 0.5 at [2, 3] (got 2.5, want 2)" in result.detail


def test_all_zeros_when_the_reference_is_not_fails_even_with_huge_tolerances():
    want = np.ones(8)
    result = numerics.compare("out", np.zeros(8, np.float32), want, rtol=10.0, atol=10.0)
    assert not result.ok and "every output is zero" in result.detail
    assert numerics.compare("out", np.zeros(8, np.float32), np.zeros(8)).ok


def test_nan_where_the_reference_has_a_number_fails():
    want = np.ones(3)
    got = np.array([1.0, np.nan, 1.0], np.float32)
    result = numerics.compare("out", got, want)
    assert not result.ok and result.max_abs == np.inf
    assert numerics.compare("out", np.array([np.nan, 1.0]), np.array([np.nan, 1.0])).ok


def test_nan_everywhere_in_both_proves_nothing_and_fails():
    """A kernel and a reference that both give NaN for every element passed numerics, vmap and grad."""
    nan = np.full(4, np.nan)
    result = numerics.compare("out", nan.astype(np.float32), nan)
    assert not result.ok and "every element is NaN or infinite in both the op and the reference" in result.detail
    assert not numerics.compare("out", np.full(2, np.inf, np.float32), np.full(2, np.inf)).ok
    assert numerics.compare("out", np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.0])).ok


def test_integers_are_exact():
    want = np.arange(10)
    assert numerics.compare("out", want.astype(np.int32), want).ok
    off = want.astype(np.int32) + np.eye(1, 10, 4, dtype=np.int32)[0]
    assert not numerics.compare("out", off, want).ok


def test_half_types_are_loose_and_overrides_win():
    want = np.linspace(1, 2, 50)
    assert numerics.compare("out", want.astype(np.float16), want).ok
    assert not numerics.compare("out", want.astype(np.float16), want, rtol=0.0, atol=0.0).ok
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert numerics.compare("out", want.astype(ml_dtypes.bfloat16), want).ok
    assert numerics.widen(want.astype(ml_dtypes.bfloat16)).dtype == np.float64


def test_shape_mismatch_fails():
    result = numerics.compare("out", np.zeros((2, 3), np.float32), np.zeros((3, 2)))
    assert not result.ok and "shape (2, 3)" in result.detail


@pytest.mark.parametrize("returned, named", [(None, "NoneType"), ("hello", "str"), ({"out": 1}, "dict"), (object(), "object"), ((x for x in ()), "generator")])
def test_a_reference_that_returns_no_numbers_is_named_for_what_it_returned(returned, named):
    result = numerics.compare("out", np.ones(3, np.float32), returned)
    assert not result.ok and result.detail == f"out: the reference returned {named}, not an array of numbers"


def test_integers_from_the_reference_for_a_float_output_are_named_when_they_differ():
    truncated = numerics.compare("out", np.full(3, 0.5, np.float32), np.zeros(3, np.int32))
    assert not truncated.ok and truncated.detail.startswith("the reference gives int32 for a float32 output; ")
    assert numerics.compare("out", np.ones(3, np.float32), np.ones(3, np.int32)).ok  # whole numbers that agree pass


def test_tolerance_table():
    assert numerics.tolerance("float32") == (1e-5, 1e-6)
    assert numerics.tolerance("int64") == (0.0, 0.0)
    assert numerics.tolerance("float64", atol=1e-3) == (1e-12, 1e-3)
