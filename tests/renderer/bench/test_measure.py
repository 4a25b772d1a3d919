"""The GPU clock the benchmarks report beside their figures (renderer.bench.measure.gpu_clock_mhz):
read from nvidia-smi where the adapter is NVIDIA's and exactly one GPU is listed, else nothing.
nvidia-smi is stood in for by a script on PATH that prints what the real one prints; the GPU
itself is not involved (what the clock does to the figures is in BENCHMARKS.md)."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest

from renderer.bench.measure import gpu_clock_mhz


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
