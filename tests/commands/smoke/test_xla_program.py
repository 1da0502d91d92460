"""xlacc.commands.smoke.xla_program: the StableHLO torch_xla emits, its parameters mapped through torch_xla's
tensor ids, and run by jaxlib's XLA through the one function that uses jax's private APIs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("jax", reason="jaxlib runs the program: pip install 'xlacc[jax]'")

from xlacc.commands.smoke import xla_program  # noqa: E402

# Parameters in an order of their own, as torch_xla numbers them: %arg0 is y.
SUBTRACT = """
module @IrToHlo.5 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false} {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<f32>) -> tensor<4xf32> {
    %0 = stablehlo.subtract %arg1, %arg0 : tensor<4xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""


def cpu():
    import jax

    return jax.devices("cpu")[0]


def test_run_stablehlo_runs_text_with_arguments_in_parameter_order():
    x, y = np.arange(4, dtype=np.float32), np.full(4, 10, dtype=np.float32)
    (out,) = xla_program.run_stablehlo(SUBTRACT, [y, x, np.float32(3)], cpu())
    np.testing.assert_array_equal(out, (x - y) * 3)


def test_parameters_map_operands_by_index_and_keep_constants():
    program = xla_program.EmittedProgram(SUBTRACT, [1, 0, np.asarray(3, dtype=np.float32)])
    x, y = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    arguments = program.arguments([x, y])
    assert arguments[0] is not None and np.array_equal(arguments[0], y) and np.array_equal(arguments[1], x)
    (out,) = xla_program.run_stablehlo(program.text, arguments, cpu())
    np.testing.assert_array_equal(out, (x - y) * 3)


def test_emitted_program_round_trips_through_json():
    import ml_dtypes

    constant = np.asarray([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    program = xla_program.EmittedProgram("module {}", [2, constant, np.asarray(7, dtype=np.int32)])
    again = xla_program.EmittedProgram.from_json(program.to_json())
    assert again.text == "module {}" and again.parameters[0] == 2
    assert again.parameters[1].dtype == constant.dtype and np.array_equal(again.parameters[1], constant)
    assert again.parameters[2].dtype == np.int32 and again.parameters[2].shape == () and int(again.parameters[2]) == 7


@pytest.mark.skipif(importlib.util.find_spec("torch_xla") is None, reason="torch_xla is not installed")
def test_emit_maps_torch_xla_parameters_to_the_operands_and_the_program_runs():
    """The trap: torch_xla's parameter order is its own, and Python scalars become parameters."""
    import os
    import subprocess
    import sys

    script = """
import numpy as np, torch, torch_xla
from xlacc.commands.smoke import xla_program
import jax
x, y = np.arange(6, dtype=np.float32), np.linspace(-1, 1, 6).astype(np.float32)
device = torch_xla.device()
tx, ty = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
program = xla_program.emit([(tx - ty) * 3.0], [tx, ty])
assert sorted(p for p in program.parameters if isinstance(p, int)) == [0, 1], program.parameters
assert any(not isinstance(p, int) and float(p) == 3.0 for p in program.parameters), program.parameters
(out,) = xla_program.run_stablehlo(program.text, program.arguments([x, y]), jax.devices("cpu")[0])
np.testing.assert_allclose(out, (x - y) * 3, rtol=1e-6)
print("ok", program.parameters)
"""
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]
