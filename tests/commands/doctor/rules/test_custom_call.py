"""The custom call as lowered: absent, its backend_config, operands and results against the spec,
as run-smoke's harnesses and the HLO rule report them; and as doctor reads it in Python."""

from __future__ import annotations

from dataclasses import replace

from xlacc.commands.doctor.rules import custom_call, hlo as hlo_rules
from xlacc.ground.catalogue import WORDINGS
from xlacc.readers import hlo
from xlacc.readers.python import read

TORCH_XLA = "run-smoke torch-xla"
LINE = ('ROOT %r = f32[{n}]{{0}} custom-call(f32[{n}]{{0}} %a, f32[{n}]{{0}} %b), custom_call_target="my_add", '
        'api_version=API_VERSION_STATUS_RETURNING, backend_config="{config}"')


def lowered(n: int, config: str) -> hlo.CustomCall:
    [call] = hlo.hlo_custom_calls(LINE.format(n=n, config=config))
    return call


def test_absent_only_when_the_program_holds_no_custom_call_at_all():
    found = custom_call.optimized_away("the HLO of xlacc::add holds no custom-call", [], TORCH_XLA)
    assert found.code == "op-optimized-away" and found.severity == "error"  # the harness measured it
    assert found.title == WORDINGS[TORCH_XLA]["op-optimized-away"].title
    assert custom_call.optimized_away("x", [lowered(8, "n=8")], TORCH_XLA) is None  # a call to another target: another problem
    assert custom_call.optimized_away("x", []).severity == "warning"  # doctor's guess from text


def test_the_hlo_rule_reports_a_module_without_a_custom_call_through_it():
    [found] = hlo_rules.diagnose_hlo("HloModule jit_add, entry_computation_layout={()->f32[]}\nENTRY %main () -> f32[] {\n}")
    assert found.code == "op-optimized-away" and "`jit_add`" in found.evidence
    assert hlo_rules.diagnose_hlo("HloModule jit_add\n" + LINE.format(n=8, config="n=8")) == []


def test_backend_config_against_the_spec_and_its_form():
    assert custom_call.backend_config("n=8", "n=8", TORCH_XLA) is None
    assert "the spec gives 'n=8'" in custom_call.backend_config("n=9", "n=8", TORCH_XLA).evidence
    assert "is not `key=value` pairs" in custom_call.backend_config("", "", TORCH_XLA).evidence


def test_operands_count_and_order():
    call = lowered(8, "n=8")
    assert custom_call.operand_count(call, 2, ["a", "b"], TORCH_XLA) is None
    assert "2 operands in the HLO for 3 inputs (a, b, c)" in custom_call.operand_count(call, 3, ["a", "b", "c"], TORCH_XLA).evidence
    assert custom_call.operand_order(0, 0, ["a", "b"], "n=8 f32", TORCH_XLA) is None
    swapped = custom_call.operand_order(0, 1, ["a", "b"], "n=8 f32", TORCH_XLA)
    assert swapped.code == "operand-mismatch" and swapped.evidence == "operand 0 of the custom-call is b, the spec's input 0 is a (n=8 f32)"
    assert "is an unknown tensor" in custom_call.operand_order(1, None, ["a", "b"], "n=8 f32", TORCH_XLA).evidence


def test_results_against_the_reference():
    call = replace(lowered(8, "n=8"), result_shape="f32[4]{0}")
    assert custom_call.results("n=8 f32", call.result_shape, ["f32[8]"], ["f32[8]"], TORCH_XLA) is None
    found = custom_call.results("n=8 f32", call.result_shape, ["f32[4]"], ["f32[8]"], TORCH_XLA)
    assert found.code == "result-mismatch" and found.evidence == "n=8 f32: the custom-call returns f32[4]{0}; the reference and the spec give f32[8]"


def test_a_python_call_whose_attributes_its_api_version_cannot_take():
    facts = read("op.py", 'import jax\njax.ffi.ffi_call("my_add", out, custom_call_api_version=2)(x, n=3)\n')
    [call] = facts.calls
    [found] = custom_call.python_call_config("op.py:2", call)
    assert found.code == "backend-config-invalid" and "attributes n are passed with custom_call_api_version=2" in found.evidence


def test_a_constant_xla_implementation_is_folded_away():
    found = custom_call.constant_implementation("op.py:9", "_add_xla", "torch.zeros_like(x)")
    assert found.code == "op-optimized-away" and found.evidence.startswith("op.py:9: the XLA implementation `_add_xla` returns `torch.zeros_like(x)`")
