"""steady_seconds on a simulated device with its own clock: the time per run it gives is the
device's, not the launch of a sample's first run nor the host's wait, and a host slower than the
device shows as a queueing share of one."""

from __future__ import annotations

import types

import pytest

from xlacc.commands.smoke import timing


class SimulatedDevice:
    """Runs queued work in order, each run starting `launch` seconds after the host queued it at the
    earliest (an XLA:GPU executable's launch) and lasting `run_seconds`; the host takes `queue`
    seconds to queue a run and `sync` to see one finish. All on one clock."""

    def __init__(self, run_seconds: float, launch: float, queue: float, sync: float, pipelined: bool = True):
        self.run_seconds, self.launch, self.queue, self.sync, self.pipelined = run_seconds, launch, queue, sync, pipelined
        self.now = 0.0  # the host's clock
        self.free_at = 0.0  # when the device finishes what it was given

    def run(self) -> float:
        self.now += self.queue
        start = max(self.free_at, self.now + self.launch)
        self.free_at = start + self.run_seconds
        if not self.pipelined:  # the call returns when its work is done
            self.now = self.free_at
        return self.free_at

    def wait(self, finished_at: float) -> None:
        self.now = max(self.now, finished_at + self.sync)


@pytest.fixture
def device(monkeypatch):
    def make(**kwargs) -> SimulatedDevice:
        simulated = SimulatedDevice(**kwargs)
        monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: simulated.now))
        return simulated

    return make


@pytest.mark.parametrize("reps", [1, 2, 8])
def test_a_sample_counts_the_runs_and_not_the_launch_of_the_first(device, reps):
    """Waiting on an idle GPU counted 0.4 ms of launch in every sample: a 1 ms chain read 1.4 ms."""
    gpu = device(run_seconds=1e-3, launch=0.4e-3, queue=0.2e-3, sync=0.05e-3)
    seconds, queued = timing.steady_seconds(gpu.run, reps, gpu.wait, pipelined=True)
    assert seconds == pytest.approx(1e-3)
    assert queued == pytest.approx(0.2)


def test_a_device_that_runs_each_call_before_returning_is_timed_from_its_first_timed_call(device):
    cpu = device(run_seconds=1e-3, launch=0.0, queue=0.1e-3, sync=0.0, pipelined=False)
    seconds, queued = timing.steady_seconds(cpu.run, 4, cpu.wait, pipelined=False)
    assert seconds == pytest.approx(1.1e-3)  # each call's queueing and work, one after the other
    assert queued == 1.0  # the host was busy with the calls all along


def test_a_host_slower_than_the_device_queues_the_whole_time(device):
    """The device then waits on the host: the share says so (host-bound), whatever the time reads."""
    gpu = device(run_seconds=1e-3, launch=0.4e-3, queue=2e-3, sync=0.05e-3)
    _, queued = timing.steady_seconds(gpu.run, 4, gpu.wait, pipelined=True)
    assert queued == 1.0
