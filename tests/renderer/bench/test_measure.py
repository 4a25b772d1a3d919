"""The GPU clock the benchmarks report beside their figures (renderer.bench.measure.gpu_clock_mhz):
read from nvidia-smi where the adapter is NVIDIA's and exactly one GPU is listed, else nothing;
and the warm-up under load that raises it first (path_frames), on GPU adapters only. nvidia-smi
is stood in for by a script on PATH that prints what the real one prints, the renderer by an
object that counts the frames submitted; the GPU itself is not involved here (the benchmarks'
real runs are: tests/renderer/apps/test_cli_render.py; what the clock does to the figures is in
BENCHMARKS.md)."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest

from renderer.bench import measure
from renderer.bench.measure import gpu_clock_mhz, path_frames


def renderer_on(adapter: str) -> SimpleNamespace:
    return SimpleNamespace(ctx=SimpleNamespace(adapter_name=adapter))


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """Install an `nvidia-smi` that prints `text` (alone on PATH)."""

    def install(text: str, status: int = 0) -> None:
        script = tmp_path / "nvidia-smi"
        script.write_text(f"#!/bin/sh\nprintf '{text}'\nexit {status}\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", str(tmp_path))

    return install


def test_one_nvidia_gpu_reads_its_clock(smi):
    smi("1980\\n")
    assert gpu_clock_mhz(renderer_on("NVIDIA H200")) == 1980.0


def test_several_gpus_read_nothing(smi):
    smi("1980\\n345\\n")  # which of them draws is not known
    assert gpu_clock_mhz(renderer_on("NVIDIA H100 80GB HBM3")) is None


def test_another_adapter_reads_nothing(smi):
    smi("1980\\n")  # an NVIDIA GPU in the machine, but lavapipe draws
    assert gpu_clock_mhz(renderer_on("llvmpipe (LLVM 15.0.6, 256 bits)")) is None


def test_no_nvidia_smi_or_garbage_reads_nothing(smi, monkeypatch, tmp_path):
    smi("No devices were found\\n", status=6)
    assert gpu_clock_mhz(renderer_on("NVIDIA H200")) is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not os.path.exists(tmp_path / "empty")
    assert gpu_clock_mhz(renderer_on("NVIDIA H200")) is None


class CountingRenderer:
    """Submits nothing anywhere: counts frames and the cameras they were asked for."""

    def __init__(self, adapter_type: str) -> None:
        self.ctx = SimpleNamespace(adapter_type=adapter_type, adapter_name="test adapter")
        self.cams: list = []

    def submit(self, cam) -> int:
        self.cams.append(cam)
        return len(self.cams) - 1

    def stats(self, wait: bool = False):
        return SimpleNamespace(frame=len(self.cams) - 1)


def test_a_gpu_path_is_drawn_under_load_before_it_is_measured(monkeypatch):
    monkeypatch.setattr(measure, "WARMUP_SECONDS", 0.05)
    r = CountingRenderer("DiscreteGPU")
    cams = ["a", "b", "c", "d"]
    frame_ms, stats, clocks = path_frames(r, cams, 2)
    extra = r.cams[2:-4]
    assert r.cams[:2] == ["a", "b"] and r.cams[-4:] == cams
    assert len(extra) >= measure.WARMUP_BURST and len(extra) % measure.WARMUP_BURST == 0
    assert set(extra) == {"b"}  # the last warm-up camera: nothing new streams in
    assert len(frame_ms) == len(stats) == 4 and clocks is None


def test_cpu_adapters_and_streaming_paths_are_not(monkeypatch):
    monkeypatch.setattr(measure, "WARMUP_SECONDS", 0.05)
    r = CountingRenderer("CPU")
    path_frames(r, ["a", "b", "c"], 2)
    assert r.cams == ["a", "b", "a", "b", "c"]
    r = CountingRenderer("DiscreteGPU")
    path_frames(r, ["a", "b", "c"], 2, warmup_seconds=0.0)
    assert r.cams == ["a", "b", "a", "b", "c"]
