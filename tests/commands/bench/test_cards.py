"""The datasheet table behind `% of peak`: each card people bench on, found by the name jax or
nvidia-smi gives it; a CPU or an unlisted card has no peaks, said as "unknown"."""

from __future__ import annotations

import pytest

from xlacc.commands.bench import cards


@pytest.mark.parametrize("device, name, gbps", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350.0),
    ("NVIDIA H100 PCIe", "H100 PCIe", 2000.0),
    ("NVIDIA H200", "H200", 4800.0),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555.0),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB", 1555.0),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039.0),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935.0),
    ("NVIDIA L4", "L4", 300.0),
    ("NVIDIA L40S", "L40S", 864.0),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", 1008.0),
])  # fmt: skip
def test_known_cards_are_found_by_their_device_names(device, name, gbps):
    card = cards.card_for(device)
    assert card is not None and card.name == name and card.memory_gbps == gbps
    assert card.bf16_tflops > card.f32_tflops > 0 and card.l2_mib > 0


def test_bf16_and_f16_use_the_tensor_peak_and_f32_the_plain_one():
    h100 = cards.card_for("NVIDIA H100 80GB HBM3")
    assert h100.peak_tflops("bf16") == h100.peak_tflops("f16") == 989.4
    assert h100.peak_tflops("f32") == 66.9


def test_a_cpu_and_an_unlisted_card_have_unknown_peaks():
    assert cards.card_for("cpu", "cpu") is None
    assert cards.card_for("NVIDIA L40") is None  # "l4" is a word of the L4's name, not a part of L40's
    assert cards.card_for("Tesla T4") is None
    assert cards.describe("cpu", "cpu") == "cpu: unknown peaks (cpu)"
    assert "unknown" in cards.describe("Tesla T4", "gpu")
    assert "3350 GB/s" in cards.describe("NVIDIA H100 80GB HBM3", "gpu")
