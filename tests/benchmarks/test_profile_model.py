"""benchmarks/profile_model.py's accounting of a traced decode step: kernels by kind, the time no
kernel ran, and what each idle stretch waited for (the figures RESULTS.md quotes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
profile_model = pytest.importorskip("profile_model")

# (name, start ns, duration ns): a GEMM, an all-reduce on another stream overlapping it, a gap of
# 5 us, a fusion, a gap of 5 us, the attention op
KERNELS = [
    ("nvjet_sm90_tst_64x64_64x13_4x2_h_bz_TNT", 0, 10_000),
    ("all_reduce_22_0_fusion_1", 5_000, 20_000),
    ("loop_multiply_fusion_31", 30_000, 5_000),
    ("void paged_attention_mma_kernel<__nv_bfloat16, 128, 16, 4, 3>", 40_000, 10_000),
]


@pytest.mark.parametrize(("kernel", "kind"), [
    ("nvjet_sm90_tst_112x128_64x7_2x1_v_bz_TNN", "gemm"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float>", "gemm"),
    ("all_reduce_64_fusion_1", "all-reduce"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "all-reduce"),
    ("void (anonymous namespace)::paged_attention_mma_kernel<__nv_bfloat16, 128, 16, 4, 3>", "attention op"),
    ("MemcpyP2P", "copy"),
    ("input_concatenate_fusion_15", "xla fusion"),
    ("void (anonymous namespace)::ragged_prefill_kernel<__nv_bfloat16, 128, 16, 3>", "attention op"),
    ("void (anonymous namespace)::write_rows_kernel<uint4>", "kv write"),
    ("void some_user_kernel<float>", "other"),
])
def test_kernels_are_sorted_into_kinds_by_name(kernel, kind):
    assert profile_model.kind_of(kernel) == kind


def test_overlapping_kernels_count_once_toward_busy_time():
    assert profile_model.busy_ns(KERNELS) == 25_000 + 5_000 + 10_000


def test_idle_stretches_name_the_kernels_around_them():
    assert profile_model.idle_gaps(KERNELS) == [
        (5_000, "all_reduce_22_0_fusion_1", "loop_multiply_fusion_31", 25_000),
        (5_000, "loop_multiply_fusion_31", "void paged_attention_mma_kernel<__nv_bfloat16, 128, 16, 4, 3>", 35_000),
    ]


def test_breakdown_is_per_step():
    got = profile_model.breakdown(KERNELS, steps=2, top=2)
    assert got["span_us_per_step"] == 25.0
    assert (got["busy_us_per_step"], got["idle_us_per_step"]) == (20.0, 5.0)
    assert got["by_kind"]["all-reduce"] == {"us": 10.0, "count": 0.5}
    assert got["idle_before"] == {"xla fusion": 2.5, "attention op": 2.5}
    assert [row["kind"] for row in got["busiest"]] == ["all-reduce", "gemm"]


# A trace as jax's profiler writes it (an XSpace, here as text): a GPU plane with a stream line
# and a line derived from it, and a host plane whose event overlaps the GPU's idle stretch.
TRACE = """
planes { id: 1 name: "/device:GPU:0"
  lines { id: 1 name: "Stream #13(Compute)" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 0 duration_ps: 10000000 }
    events { metadata_id: 2 offset_ps: 15000000 duration_ps: 5000000 } }
  lines { id: 2 name: "XLA Ops" timestamp_ns: 1000 events { metadata_id: 3 offset_ps: 0 duration_ps: 10000000 } }
  event_metadata { key: 1 value { id: 1 name: "nvjet_sm90_gemm" } }
  event_metadata { key: 2 value { id: 2 name: "loop_add_fusion" } }
  event_metadata { key: 3 value { id: 3 name: "dot.1" } } }
planes { id: 2 name: "/host:CPU"
  lines { id: 1 name: "python" timestamp_ns: 1000 events { metadata_id: 1 offset_ps: 9000000 duration_ps: 8000000 } }
  event_metadata { key: 1 value { id: 1 name: "PjitFunction(_decode_steps)" } } }
"""


def test_a_trace_gives_the_streams_kernels_and_what_the_host_ran_while_the_gpu_waited():
    profiler = pytest.importorskip("jax.profiler")
    data = profiler.ProfileData.from_text_proto(TRACE)
    kernels = profile_model.device_kernels(data, 0)
    assert kernels == [("nvjet_sm90_gemm", 1000, 10_000), ("loop_add_fusion", 16_000, 5_000)]  # not the derived "XLA Ops" line
    assert profile_model.device_kernels(data, 1) == []
    assert profile_model.host_events_in_gaps(data, kernels, 3) == [{"us": 5.0, "event": "PjitFunction(_decode_steps)", "thread": "python"}]
