"""`finops export` as a local attacker meets it: a symlink planted where the temporary file
would go, a FINOPS_HOME the user may only read, and CSV cells from hostile tag values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.csv as pacsv
import pytest

from finops.alerts.csv_safe import safe_cell
from finops.cli.main import main
from tests.fixtures.focus_rows import focus_row, write_focus


@pytest.fixture
def loaded_home(duckdb_wh, finops_home, tmp_path) -> Path:
    rows = [
        focus_row("a", "2024-05", i, resource_name=name, tags=json.dumps({"team": name}))
        for i, name in enumerate(['=HYPERLINK("http://evil.example")', "\u00a0=1+1", "\uff1dcmd", "ok"])
    ]
    duckdb_wh.replace_partition(
        "focus_costs",
        {"x_source": "a", "x_billing_period": "2024-05"},
        [write_focus(tmp_path / "in.parquet", rows)],
    )
    duckdb_wh.close()
    return finops_home


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_symlink_planted_at_the_temporary_name_is_not_followed(loaded_home, tmp_path, capsys, fmt):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"focus.{fmt}"
    for pid in {os.getpid(), os.getppid()}:  # the old predictable name: .{name}.{pid}.part
        (out_dir / f".{out.name}.{pid}.part").symlink_to(victim)
    assert main(["export", "focus", "--period", "2024-05", "--out", str(out)]) == 0, capsys.readouterr()
    assert victim.read_text() == "precious"
    assert out.is_file() and not out.is_symlink()


def test_export_reads_a_home_it_may_not_write(loaded_home, tmp_path, capsys):
    """Another process holds the warehouse read-only (a shared lock a writer cannot take) and
    nothing in FINOPS_HOME may change: the export opens it read-only and creates nothing there."""
    db = loaded_home / "warehouse.duckdb"
    code = (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); print('ready', flush=True); "
        "sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        before = _tree(loaded_home)
        out = tmp_path / "focus.csv"
        assert main(["export", "focus", "--period", "2024-05", "--out", str(out)]) == 0, capsys.readouterr()
        assert _tree(loaded_home) == before
    finally:
        proc.stdin.close()
        proc.wait(30)
    names = pacsv.read_csv(out).column("ResourceName").to_pylist()
    assert sorted(names) == sorted(
        safe_cell(n) for n in ['=HYPERLINK("http://evil.example")', "\u00a0=1+1", "\uff1dcmd", "ok"]
    )
    assert all(n.startswith("'") for n in names if n != "ok")
