"""HLO text as dumps and compiled executables print it (`%name = shape opcode(shape %operand)`) and as
`jax.jit(f).lower(x).compiler_ir("hlo").as_hlo_text()` does (bare names, operands without shapes)."""

from __future__ import annotations

from xlacc.readers import hlo

# What jax 0.10's as_hlo_text() printed for a KV write into a cache the jitted function closed over.
BARE = """HloModule jit__lambda, entry_computation_layout={(bf16[4,8,128]{2,1,0}, s32[4]{0})->bf16[64,16,8,128]{3,2,1,0}}

ENTRY main.1 {
  k.1 = bf16[4,8,128]{2,1,0} parameter(0)
  slots.1 = s32[4]{0} parameter(1)
  constant.1 = bf16[64,16,8,128]{3,2,1,0} constant({...})
  ROOT ffi_call.1 = bf16[64,16,8,128]{3,2,1,0} custom-call(k.1, slots.1, constant.1), custom_call_target="kv_write", output_to_operand_aliasing={{}: (2, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}
}
"""
PERCENT = (
    "  %a = f32[8]{0} parameter(0)\n"
    '  ROOT %r = f32[8]{0} custom-call(f32[8]{0} %a, f32[8]{0} %a), custom_call_target="my_add", api_version=API_VERSION_TYPED_FFI\n'
)


def test_bare_names_are_read_as_instructions_and_operands():
    (call,) = hlo.hlo_custom_calls(BARE)
    assert (call.target, call.operands, call.aliases) == ("kv_write", ("k.1", "slots.1", "constant.1"), ((0, 2),))
    assert call.operand_shapes == ("", "", "") and call.api_version == hlo.TYPED_FFI
    instructions = hlo.hlo_instructions(BARE)
    assert instructions["constant.1"].opcode == "constant" and instructions["constant.1"].shape.startswith("bf16[64,16,8,128]")
    assert instructions["ffi_call.1"].operands == ("k.1", "slots.1", "constant.1")


def test_names_with_percent_signs_keep_their_operand_shapes():
    (call,) = hlo.hlo_custom_calls(PERCENT)
    assert call.operands == ("a", "a") and call.operand_shapes == ("f32[8]{0}", "f32[8]{0}")


def test_assignments_in_a_log_are_not_instructions():
    log = "loss = compute(x)\nstep = 3 add(4)\nresult = custom-call(a, b)\n"
    assert hlo.hlo_instructions(log) == {} and hlo.hlo_custom_calls(log) == []
