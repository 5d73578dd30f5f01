"""bench/commitments.py runs on a tiny input and its own checks hold (the SQL-grouped and the
naive read agree, the prefix-sum and the full-pass optimum agree); speed is not asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_commitments_bench_checks_hold():
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins")}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "commitments.py"), "--rows", "3000"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if "check=" in ln]
    assert len(lines) == 2 and all("check=ok" in ln for ln in lines), proc.stdout
