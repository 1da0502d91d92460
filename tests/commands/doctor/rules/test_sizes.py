"""Sizes fixed where the call should give them: here, as run-smoke's torch_xla harness sees them in
two lowerings (the C++ side is in test_source_rules.py)."""

from __future__ import annotations

from xlacc.commands.doctor.rules import sizes
from xlacc.readers import hlo

TORCH_XLA = "run-smoke torch-xla"
LINE = ('ROOT %r = f32[{n}]{{0}} custom-call(f32[{n}]{{0}} %a), custom_call_target="my_add", '
        'api_version=API_VERSION_STATUS_RETURNING, backend_config="{config}"')


def lowered(n: int, config: str) -> hlo.CustomCall:
    [call] = hlo.hlo_custom_calls(LINE.format(n=n, config=config))
    return call


def test_sizes_fixed_in_backend_config():
    small, large, fixed = lowered(8, "n=8"), lowered(64, "n=64"), lowered(64, "n=8")
    assert sizes.backend_config_fixed(8, 64, small, large, TORCH_XLA) is None
    found = sizes.backend_config_fixed(8, 64, small, fixed, TORCH_XLA)
    assert found.code == "hardcoded-size" and found.evidence == "backend_config is 'n=8' for n=8 and for n=64"
    assert sizes.backend_config_fixed(8, 8, small, small, TORCH_XLA) is None  # same shapes: nothing to tell
