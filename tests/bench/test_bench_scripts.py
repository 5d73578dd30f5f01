"""The other bench/ scripts run on tiny inputs and print their figures, so the README's numbers
stay re-measurable with one command each. Speed is never asserted; each script's own
correctness check (totals, equal answers, labelled anomalies found) is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_validate_bench():
    out = _run("validate.py", "--rows", "2000")
    assert "validate_staging: success=True rules=43 failures=[]" in out and "rows/s:" in out


@pytest.mark.postgres
def test_warehouse_load_bench(pg_dsn):
    out = _run("warehouse_load.py", "--rows", "2000", "--pg-dsn", pg_dsn, "--copy-connections", "1,2")
    lines = [line for line in out.splitlines() if "rows/s=" in line]
    # duckdb, postgresql csv COPY, binary COPY, partition swap x1 and x2; first load / restatement
    assert len(lines) == 10 and all(line.endswith("check=ok") for line in lines), out
    assert "postgresql binary vs csv:" in out
    assert "swap x1: " in out and "swap x2: " in out and "x csv" in out


def test_anomaly_bench_on_a_short_history():
    out = _run("anomaly.py", "--series", "60", "--days", "90")  # fewer event slots than a year: no crash
    assert "finops (log level + weekday, MAD)" in out and "kubecost-style" in out


def test_ui_bench():
    out = _run("ui.py", "--days", "3", "--rows-per-day", "2000", "--repeat", "2")
    for page in (
        "overview",
        "showback table",
        "tag compliance (+ month cost)",
        "cost by provider (NO rollup: raw scan)",
    ):
        assert page in out, out


@pytest.mark.postgres
def test_celery_vs_dagtest_bench_spine_and_dagtest(tmp_path):
    """The spine and dag.test() modes (the Celery mode's topology is tests/integration's job)."""
    out = _run("celery_vs_dagtest.py", "--rows", "2000", "--modes", "spine,dagtest", "--cache", str(tmp_path))
    assert out.count('"billed_matches_generator": true') == 2, out
    assert "stage_peak_rss_mb" in out and "dagtest 2,000 rows:" in out
