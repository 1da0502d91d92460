"""doctor's closed-over-array: arrays compiled into a program as constants (HLO text, StableHLO, an
--xla_dump_to folder, a command's dump), as a jitted function that closes over a cache makes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from locations import REPO_DIR

from xlacc.commands.doctor.rules import hlo_constants

ARTIFACTS = REPO_DIR / "tests" / "artifacts" / "doctor" / "sources"
CLOSED_OVER = (ARTIFACTS / "closed_over_cache.hlo").read_text()
AS_ARGUMENT = (ARTIFACTS / "clean" / "cache_as_argument.hlo").read_text()
WRITE_INTO_CONSTANT = (ARTIFACTS / "kv_write_into_constant.hlo").read_text()
WRITE_INTO_ARGUMENT = (ARTIFACTS / "clean" / "kv_write_into_argument.hlo").read_text()


def hlo_constant(name: str, shape: str) -> str:
    return f"  %{name} = {shape} constant({{...}})\n"


def test_the_caches_a_step_closed_over_are_named_largest_first_with_their_sizes():
    (finding,) = hlo_constants.diagnose(CLOSED_OVER, where="module.txt")
    assert finding.code == "closed-over-array" and finding.severity == "warning"
    assert finding.evidence.startswith("module.txt: 2 constants of 512 MiB in all")
    assert "`%constant.2` bf16[8192,16,8,128] (256 MiB); `%constant.3` bf16[8192,16,8,128] (256 MiB)" in finding.evidence
    assert "constant.4" not in finding.evidence  # the block table: 32 KiB
    assert "donate_argnums" in finding.fix


def test_the_same_step_taking_its_caches_as_arguments_is_clean():
    assert "parameter(1)" in AS_ARGUMENT and hlo_constants.diagnose(AS_ARGUMENT) == []


def test_a_cache_a_custom_call_writes_in_place_is_an_error_at_any_size():
    """2 MiB, under the size threshold: the write lands in XLA's copy of the constant, so every call
    starts from the contents the cache had when the step was traced."""
    (finding,) = hlo_constants.diagnose(WRITE_INTO_CONSTANT, where="module.txt")
    assert finding.severity == "error" and finding.title.startswith("`kv_write` writes in place into a constant")
    assert finding.evidence == 'module.txt: custom_call_target="kv_write" writes its result 0 into operand 2, `%constant.1` bf16[64,16,8,128], a constant'
    assert hlo_constants.diagnose(WRITE_INTO_ARGUMENT) == []  # the cache passed in (and donated): written in place for real


def test_the_write_is_found_in_the_text_as_hlo_text_prints_it_too():
    """compiler_ir("hlo").as_hlo_text() prints names without % and operands without shapes."""
    bare = WRITE_INTO_CONSTANT.replace("%", "").replace("  copy.2 = bf16[64,16,8,128]{3,2,1,0} copy(constant.1)\n", "").replace("copy.2)", "constant.1)")
    assert "%" not in bare and "custom-call(k.1, slots.1, constant.1)" in bare
    (finding,) = hlo_constants.diagnose(bare)
    assert finding.severity == "error" and "`%constant.1`" not in finding.evidence and "`constant.1` bf16[64,16,8,128]" in finding.evidence


def test_an_aliased_operand_is_followed_through_bitcasts_and_a_bad_index_is_ignored():
    through = WRITE_INTO_CONSTANT.replace("%copy.2 = bf16[64,16,8,128]{3,2,1,0} copy(%constant.1)", "%copy.2 = bf16[64,16,8,128]{3,2,1,0} bitcast(%constant.1)")
    assert hlo_constants.diagnose(through)[0].severity == "error"
    out_of_range = WRITE_INTO_CONSTANT.replace("output_to_operand_aliasing={{}: (2, {})}", "output_to_operand_aliasing={{}: (7, {})}")
    assert hlo_constants.diagnose(out_of_range) == []
    gemm = WRITE_INTO_CONSTANT.replace('custom_call_target="kv_write"', 'custom_call_target="__cublas$gemm"')  # a bias added in place
    assert hlo_constants.diagnose(gemm) == []


def test_the_threshold_and_the_element_sizes():
    limit = hlo_constants.LARGE_CONSTANT_BYTES
    assert hlo_constants.diagnose(hlo_constant("c", f"f32[{limit // 4 - 1}]{{0}}")) == []
    assert len(hlo_constants.diagnose(hlo_constant("c", f"f32[{limit // 4}]{{0}}"))) == 1
    assert len(hlo_constants.diagnose(hlo_constant("c", f"f8e4m3fn[{limit}]{{0}}"))) == 1  # one byte an element
    assert hlo_constants.diagnose(hlo_constant("c", f"f8e4m3fn[{limit - 1}]{{0}}")) == []
    assert hlo_constants.diagnose(hlo_constant("c", f"token[{limit}]")) == []  # no size known: not guessed
    assert hlo_constants.diagnose("  %c = f32[] constant(0)\n  %d = f32[4]{0} constant({1, 2, 3, 4})\n") == []


def test_many_constants_show_the_three_largest_and_count_the_rest():
    text = "".join(hlo_constant(f"c{i}", f"bf16[{(i + 8) << 20}]{{0}}") for i in range(5))
    (finding,) = hlo_constants.diagnose(text)
    assert finding.evidence.startswith("5 constants of")
    assert finding.evidence.index("`%c4`") < finding.evidence.index("`%c3`") < finding.evidence.index("`%c2`")
    assert "`%c1`" not in finding.evidence and finding.evidence.endswith("and 2 more")


def test_stablehlo_constants_are_read_from_the_type_that_closes_a_megabytes_long_line():
    value = "0x" + "3E3B" * 800_000  # what jax prints for a closed-over array, cut short
    text = (
        f'    %cst = stablehlo.constant dense<"{value}"> : tensor<8192x16x8x128xbf16>\n'
        "    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<8192x16x8x128xbf16>\n"  # a splat: XLA broadcasts one value
        "    %c = stablehlo.constant dense<[2048, 2048]> : tensor<2xi32>\n"
        "    %cst_1 = stablehlo.constant dense_resource<__elided__> : tensor<4096x1024xf32>\n"  # printed with large elements elided
    )
    (finding,) = hlo_constants.diagnose(text)
    assert "`%cst` tensor<8192x16x8x128xbf16> (256 MiB)" in finding.evidence and "%cst_0" not in finding.evidence
    assert "`%cst_1` tensor<4096x1024xf32> (16 MiB)" in finding.evidence
    assert len(finding.evidence) < 400


def test_every_compiled_module_of_a_dump_folder_is_read(tmp_path):
    (tmp_path / "module_0001.jit_step.sm_9.0_gpu_after_optimizations.txt").write_text(CLOSED_OVER)
    (tmp_path / "module_0002.jit_other.sm_9.0_gpu_after_optimizations.txt").write_text(AS_ARGUMENT)
    (tmp_path / "module_0001.jit_step.before_optimizations.txt").write_text(CLOSED_OVER)  # not the compiled program
    done = subprocess.run([sys.executable, "-m", "xlacc", "doctor", "--json", str(tmp_path)], cwd=REPO_DIR, capture_output=True, text=True, timeout=120)
    # The dump section names the module it read; the folder's files are also read one by one, as text.
    (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["evidence"].startswith("module_")]
    assert finding["code"] == "closed-over-array"
    assert finding["evidence"].startswith("module_0001.jit_step.sm_9.0_gpu_after_optimizations.txt: 2 constants")


STEP = """
import sys
import jax, jax.numpy as jnp, numpy as np
cache = jnp.asarray(np.random.default_rng(0).standard_normal(8 << 20, dtype=np.float32))  # 32 MiB, no iota XLA could recognise
def step(q, cache):
    return cache[q.astype(jnp.int32)] * 2  # a gather at traced indices: XLA cannot fold the constant away
if sys.argv[1] == "closed-over":
    jax.jit(lambda q: step(q, cache))(jnp.ones(4)).block_until_ready()
else:
    jax.jit(step)(jnp.ones(4), cache).block_until_ready()
"""


@pytest.mark.parametrize("how", ["closed-over", "argument"])
def test_doctor_names_the_array_a_jax_program_closed_over(tmp_path, how):
    """A real jax program under `xlacc doctor -- COMMAND`: the compiled HLO XLA dumps holds the array
    closed over as a 32 MiB constant, and nothing when the array is an argument."""
    pytest.importorskip("jax")
    script = tmp_path / "step.py"
    script.write_text(STEP)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {"JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-m", "xlacc", "doctor", "--json", "--", sys.executable, str(script), how],
                          cwd=REPO_DIR, capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    codes = [f["code"] for f in json.loads(done.stdout)["findings"]]
    assert ("closed-over-array" in codes) == (how == "closed-over"), done.stdout[-2000:]
