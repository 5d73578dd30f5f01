"""bench/ingest.py runs end to end on a tiny month: every path it times (direct, staging, from
moto S3 with the download, pandas) loads and reconciles, so the figures in the README can be
re-measured by anyone with one command. Speed itself is never asserted here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ingest_bench_runs_every_path_and_reconciles(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "ingest.py"), "--rows", "3000", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for path in ("direct", "staging", "from S3"):
        assert re.search(rf"^{path}: loaded [\d,]+ FOCUS rows, .* reconciled=True", out, re.M), out
    for label in (
        "DuckDB scan-only baseline",
        "DuckDB copy-only floor",
        "FOCUS mapping only",
        "from S3: extract (manifest + download)",
        "pandas (read + same mapping + write)",
    ):
        assert re.search(rf"^\s*{re.escape(label)}.*\s[\d.]+\s+[\d,]+", out, re.M), (label, out)
    assert "spine (direct) vs pandas:" in out and "the mapping alone reaches" in out
