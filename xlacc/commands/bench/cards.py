"""Datasheet peaks of the cards people bench on: memory bandwidth, dense tensor bf16 and plain f32
FLOP/s, and the L2 size that ``--cold-l2`` must overflow. Figures are NVIDIA's datasheets (dense,
without sparsity); a device not listed is "unknown" and gets no %-of-peak column.
"""

from __future__ import annotations

import re

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Card:
    name: str
    memory: str
    memory_gbps: float
    bf16_tflops: float  # dense tensor-core bf16 (f16 the same), f32 accumulation
    f32_tflops: float  # plain f32 on the CUDA cores (no TF32)
    l2_mib: float

    def peak_tflops(self, dtype: str) -> float:
        return self.bf16_tflops if dtype in ("bf16", "f16") else self.f32_tflops

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# (words the device's name must hold, lower case) -> card; the first match wins, so the
# more specific names come first.
CARDS: tuple[tuple[tuple[str, ...], Card], ...] = (
    (("h100", "pcie"), Card("H100 PCIe", "HBM2e", 2000.0, 756.0, 51.2, 50.0)),
    (("h100",), Card("H100 SXM", "HBM3", 3350.0, 989.4, 66.9, 50.0)),
    (("h200",), Card("H200", "HBM3e", 4800.0, 989.4, 66.9, 60.0)),  # L2: as the device reports it (PyTorch, 2026-10-28)
    (("a100", "80gb", "pcie"), Card("A100 80GB PCIe", "HBM2e", 1935.0, 312.0, 19.5, 40.0)),
    (("a100", "80gb"), Card("A100 80GB SXM", "HBM2e", 2039.0, 312.0, 19.5, 40.0)),
    (("a100",), Card("A100 40GB", "HBM2", 1555.0, 312.0, 19.5, 40.0)),
    (("l40s",), Card("L40S", "GDDR6", 864.0, 362.1, 91.6, 96.0)),
    (("l4",), Card("L4", "GDDR6", 300.0, 121.0, 30.3, 48.0)),
    (("4090",), Card("RTX 4090", "GDDR6X", 1008.0, 165.2, 82.6, 72.0)),
)
UNKNOWN = "unknown"


def card_for(device_name: str, platform: str = "gpu") -> Card | None:
    """The card a device name (jax's device_kind, nvidia-smi's name) is; None for a CPU or a card
    not in the table."""
    if platform == "cpu":
        return None
    words = set(re.split(r"[^a-z0-9]+", device_name.lower()))  # whole words: "l4" is not "l40s"
    return next((card for needles, card in CARDS if all(n in words for n in needles)), None)


def describe(device_name: str, platform: str) -> str:
    card = card_for(device_name, platform)
    if platform == "cpu":
        return f"cpu: {UNKNOWN} peaks ({device_name})"
    if card is None:
        return f"{device_name}: not in xlacc's table of cards ({UNKNOWN} peaks)"
    return f"{card.name}: {card.memory} {card.memory_gbps:.0f} GB/s, bf16 {card.bf16_tflops:g} TFLOP/s, f32 {card.f32_tflops:g} TFLOP/s, L2 {card.l2_mib:g} MiB"
