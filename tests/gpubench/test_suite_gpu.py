"""The quick profile on a real GPU (skipped where there is none: CI here is CPU-only)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from finops.gpubench.schema import validate

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no NVIDIA GPU")]


def test_quick_suite_on_cuda(tmp_path):
    out = tmp_path / "gpu.json"
    proc = subprocess.run(
        [sys.executable, "-m", "finops.gpubench", "--json", str(out), "--quick", "--device", "cuda"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = validate(json.loads(out.read_text()))
    got = {(m["metric"], m["dtype"]): m["value"] for m in doc["results"]}
    assert doc["device"]["compute_capability"] and doc["device"]["memory_bytes"] > 0
    assert got[("matmul_tflops", "bf16")] > got[("matmul_tflops", "fp32")]
    assert got[("device_copy_bandwidth", None)] > 100  # GB/s: any datacenter GPU
    assert got[("h2d_bandwidth_pinned", None)] > got[("h2d_bandwidth_pageable", None)] * 0.5
    assert all(c["ok"] for c in doc["sections"]["training"]["details"]["loss_checks"].values())
