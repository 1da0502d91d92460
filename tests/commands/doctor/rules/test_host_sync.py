"""Host synchronisation in a GPU handler: blocking calls, hidden waits (a copy into host memory the
host then reads), and a fix that fits why the code waits."""

from __future__ import annotations

import time

from xlacc.commands.doctor import analysis
from xlacc.commands.doctor.inputs import SourceFile

HEAD = '#include <cuda_runtime.h>\n#include "xla/ffi/api/ffi.h"\nnamespace ffi = xla::ffi;\n'


def handler(body: str, name: str = "Op", binding: str = "") -> str:
    binding = binding or ".Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::Buffer<ffi::S32>>()"
    return (
        f"ffi::Error {name}Impl(cudaStream_t stream, ffi::Buffer<ffi::S32> in, ffi::ResultBuffer<ffi::S32> out) {{\n{body}\n"
        f"  return ffi::Error::Success();\n}}\n"
        f"XLA_FFI_DEFINE_HANDLER_SYMBOL({name}, {name}Impl, ffi::Ffi::Bind(){binding});\n"
    )


def host_syncs(*texts: str):
    files = [SourceFile(f"k{i}.cu", "c", HEAD + text, f"k{i}.cu") for i, text in enumerate(texts)]
    report = analysis.analyze(files)
    return [f for fs in report.by_group.values() for f in fs if f.code == "host-sync-in-handler"]


def test_a_copy_into_stack_memory_is_a_hidden_wait():
    (finding,) = host_syncs(handler(
        "  int total = 0;\n  cudaMemcpyAsync(&total, in.typed_data(), sizeof(int), cudaMemcpyDeviceToHost, stream);\n"
        "  launch(out->typed_data(), total, stream);"
    ))
    assert "`cudaMemcpyAsync` at k0.cu:6" in finding.evidence and "(`&total`)" in finding.evidence
    assert "hidden wait" in finding.evidence and "XLA orders the stream" not in finding.fix


def test_a_copy_into_a_local_vector_or_array_is_one_too():
    vector = host_syncs(handler(
        "  std::vector<int> host(16);\n  cudaMemcpyAsync(host.data(), in.typed_data(), 64, cudaMemcpyDeviceToHost, stream);"
    ))
    array = host_syncs(handler("  int host[16];\n  cudaMemcpyAsync(host, in.typed_data(), 64, cudaMemcpyDeviceToHost, stream);"))
    assert len(vector) == len(array) == 1


def test_copies_to_the_device_or_into_pinned_memory_are_no_hidden_wait():
    assert host_syncs(handler("  int total = 1;\n  cudaMemcpyAsync(out->typed_data(), &total, 4, cudaMemcpyHostToDevice, stream);")) == []
    pinned = "  int* total;\n  cudaMallocHost(&total, 4);\n  cudaMemcpyAsync(total, in.typed_data(), 4, cudaMemcpyDeviceToHost, stream);"
    findings = host_syncs(handler(pinned))
    assert [f.evidence.split("`")[1] for f in findings] == ["cudaMallocHost"]  # the allocation blocks; the copy does not


def test_a_copy_followed_by_an_explicit_wait_is_told_once_with_why_it_waits():
    (finding,) = host_syncs(handler(
        "  int total = 0;\n  cudaMemcpyAsync(&total, in.typed_data(), 4, cudaMemcpyDeviceToHost, stream);\n"
        "  cudaStreamSynchronize(stream);"
    ))
    assert "`cudaStreamSynchronize`" in finding.evidence and "read what it copied to the host" in finding.fix


def test_a_wait_on_the_default_stream_or_the_device_is_not_told_that_xla_orders_the_stream():
    for wait in ("cudaStreamSynchronize(0);", "cudaStreamSynchronize(cudaStreamLegacy);", "cudaDeviceSynchronize();",
                 "torch::cuda::synchronize(0);"):
        (finding,) = host_syncs(handler(f"  {wait}"))
        assert "XLA orders the stream" not in finding.fix and "cudaStreamWaitEvent" in finding.fix, wait


def test_a_wait_before_a_host_library_call_on_the_buffers_is_kept_on_purpose():
    (finding,) = host_syncs(handler(
        "  cudaStreamSynchronize(stream);\n  MPI_Allreduce(in.typed_data(), out->typed_data(), 4, MPI_INT, MPI_SUM, comm);"
    ))
    assert "`MPI_Allreduce`" in finding.fix and "cannot simply go" in finding.fix


def test_a_wait_on_the_handlers_own_stream_with_nothing_after_it_can_go():
    (finding,) = host_syncs(handler("  launch(out->typed_data(), stream);\n  cudaStreamSynchronize(stream);"))
    assert finding.fix.startswith("Drop the synchronisation (XLA orders the stream)")


def test_a_handler_without_a_stream_is_no_gpu_handler():
    cpu = handler("  cudaDeviceSynchronize();", binding=".Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::Buffer<ffi::S32>>()")
    cpu = cpu.replace("cudaStream_t stream, ", "")
    assert host_syncs(cpu) == []


def test_one_place_reached_by_several_handlers_is_one_finding_naming_them():
    helper = "static void wait_all(cudaStream_t s) {\n  cudaStreamSynchronize(s);\n  cudaStreamSynchronize(s);\n}\n"
    (finding,) = host_syncs(helper + handler("  wait_all(stream);", "A") + handler("  wait_all(stream);", "B"))
    assert "and 1 other handler (B)" in finding.evidence and "at k0.cu:5, k0.cu:6 (in wait_all" in finding.evidence


def test_reading_a_copys_destination_stays_linear_in_a_long_body():
    body = "  int a " + "a " * 200_000 + ";\n  cudaMemcpyAsync(host, in.typed_data(), 4, cudaMemcpyDeviceToHost, stream);"
    start = time.process_time()
    assert host_syncs(handler(body)) == []  # `host` is declared nowhere here: no host memory the handler owns
    assert time.process_time() - start < 5  # a quadratic search took minutes


def test_an_allocation_made_once_through_call_once_is_no_wait_per_call():
    """A pinned buffer allocated lazily, once per process, through std::call_once (a grouped GEMM's
    host copy of its group sizes did so): its calls run once, not each time the handler runs."""
    helper = (
        "static int* host_sizes = nullptr;\nstatic std::once_flag flag;\n"
        "void sizes_on_host(cudaStream_t stream, const int* sizes) {\n"
        "  auto init = [&]() { cudaMallocHost(&host_sizes, 64); };\n"
        "  std::call_once(flag, init);\n"
        "  std::call_once(flag, [&] { cudaMalloc(&scratch, 64); });\n"
        "  cudaMemcpyAsync(host_sizes, sizes, 64, cudaMemcpyDeviceToHost, stream);\n}\n"
    )
    assert host_syncs(helper + handler("  sizes_on_host(stream, in.typed_data());")) == []
    every_call = helper.replace("std::call_once(flag, init);", "init();")
    (finding,) = host_syncs(every_call + handler("  sizes_on_host(stream, in.typed_data());"))
    assert "`cudaMallocHost`" in finding.evidence  # called directly, the lambda runs every time


def test_a_hip_handler_under_capture_is_told_of_a_hip_graph():
    hip = (
        "ffi::Error OpImpl(hipStream_t stream, ffi::Buffer<ffi::S32> in, ffi::ResultBuffer<ffi::S32> out) {\n"
        "  void* scratch;\n  hipMalloc(&scratch, 64);\n  return ffi::Error::Success();\n}\n"
        "XLA_FFI_DEFINE_HANDLER_SYMBOL(Op, OpImpl, ffi::Ffi::Bind().Ctx<ffi::PlatformStream<hipStream_t>>()"
        ".Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::Buffer<ffi::S32>>(), {xla::ffi::Traits::kCmdBufferCompatible});\n"
    )
    (finding,) = host_syncs(hip)
    assert finding.severity == "error" and "captures it into a HIP graph" in finding.evidence


CAPTURED = ".Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::Buffer<ffi::S32>>(), {xla::ffi::Traits::kCmdBufferCompatible}"


def host_sources(*texts: str):
    files = [SourceFile(f"k{i}.cu", "c", HEAD + text, f"k{i}.cu") for i, text in enumerate(texts)]
    report = analysis.analyze(files)
    return [f for fs in report.by_group.values() for f in fs if f.code == "host-source-in-graph"]


def test_a_captured_handler_copying_from_its_own_host_memory_is_told_the_replay_reads_it_later():
    """A graph replays the copy from the same address: a local vector, array or variable of the call
    is gone by then (seen: an attention backward's -inf fill and an RNG seed copied from the stack)."""
    for body, source in [
        ("  std::vector<float> fill(64, -1.0f);\n  cudaMemcpyAsync(out->typed_data(), fill.data(), 256, cudaMemcpyHostToDevice, stream);", "fill.data()"),
        ("  uint64_t seed[2] = {1, 2};\n  cudaMemcpyAsync(out->typed_data(), seed, 16, cudaMemcpyHostToDevice, stream);", "seed"),
        ("  int total = in.element_count();\n  cudaMemcpyAsync(out->typed_data(), &total, 4, cudaMemcpyHostToDevice, stream);", "&total"),
    ]:
        (finding,) = host_sources(handler(body, binding=CAPTURED))
        assert finding.severity == "error" and f"copies `{source}` to the device" in finding.evidence, body
        assert "captures the handler into a CUDA graph once" in finding.evidence


def test_memory_that_outlives_the_call_or_a_handler_run_without_capture_is_left_alone():
    copy = "  cudaMemcpyAsync(out->typed_data(), {src}, 256, cudaMemcpyHostToDevice, stream);"
    assert host_sources(handler("  static std::vector<float> fill(64, -1.0f);\n" + copy.format(src="fill.data()"), binding=CAPTURED)) == []
    assert host_sources("float table[64];\n" + handler(copy.format(src="table"), binding=CAPTURED)) == []  # a global
    assert host_sources(handler("  std::vector<float> fill(64);\n" + copy.format(src="fill.data()"))) == []  # not captured: staged at once
    device = "  int total = 0;\n  cudaMemcpyAsync(&total, in.typed_data(), 4, cudaMemcpyDeviceToHost, stream);"
    assert host_sources(handler(device, binding=CAPTURED)) == []  # the other way: host-sync-in-handler's


def test_each_handler_runs_the_helpers_of_its_own_file_where_two_files_name_them_alike():
    """Two files built into separate libraries each define `Dispatch` (a multi-GPU solver's did):
    a handler runs its own file's, and its waits are told there, not the other file's."""
    waits = "void Dispatch(cudaStream_t stream) {\n  cudaDeviceSynchronize();\n}\n"
    quiet = "void Dispatch(cudaStream_t stream) {\n}\n"
    findings = host_syncs(waits + handler("  Dispatch(stream);", name="Waits"), quiet + handler("  Dispatch(stream);", name="Quiet"))
    (finding,) = findings
    assert finding.evidence.startswith("Waits (k0.cu:") and "k0.cu:5" in finding.evidence and "Quiet" not in finding.evidence
