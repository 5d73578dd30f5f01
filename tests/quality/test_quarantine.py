"""quarantine_batch: raw files copied, report.json + gx_result.json written, nothing deleted."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from finops.quality import ValidationReport, quarantine_batch, quarantine_dir


def _report() -> ValidationReport:
    return ValidationReport(
        success=False,
        failures=["charge_category: values outside allowed set: ['Bogus'] (3 rows)"],
        stats={
            "row_count": 3,
            "focus_billed_total": Decimal("1.2300000001"),
            "raw_billed_total": Decimal("1.24"),
        },
        gx_result={
            "success": False,
            "results": [{"success": False, "expectation_config": {"meta": {"rule": "x"}}}],
        },
    )


@pytest.fixture
def q_raw(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    a = raw / "part-0.csv.gz"
    a.write_bytes(b"\x1f\x8b raw bytes 0")
    b = raw / "manifest.json"
    b.write_text('{"assemblyId": "abc"}')
    return [a, b]


def test_quarantine_copies_and_reports(finops_home, q_raw):
    folder = quarantine_batch(
        source="main-payer", billing_period="2026-03", load_id="L123", raw_files=q_raw, report=_report()
    )
    assert folder == finops_home / "quarantine" / "main-payer" / "2026-03" / "L123"
    assert folder == quarantine_dir("main-payer", "2026-03", "L123")
    for f in q_raw:
        assert (folder / f.name).read_bytes() == f.read_bytes()
        assert f.exists(), "raw cache is copied, never moved"
    rep = json.loads((folder / "report.json").read_text())
    assert rep["source"] == "main-payer" and rep["load_id"] == "L123" and rep["error"] is None
    assert rep["validation"]["failures"] == _report().failures
    assert rep["validation"]["stats"]["focus_billed_total"] == "1.2300000001"  # exact, as text
    assert [f["name"] for f in rep["files"]] == ["part-0.csv.gz", "manifest.json"]
    assert all(len(f["sha256"]) == 64 for f in rep["files"])
    assert rep["gx_result_file"] == "gx_result.json"
    assert json.loads((folder / "gx_result.json").read_text()) == _report().gx_result


def test_requarantine_never_deletes_or_overwrites(finops_home, q_raw):
    folder = quarantine_dir("main-payer", "2026-03", "L1")
    folder.mkdir(parents=True)
    (folder / "note-from-human.txt").write_text("keep me")
    first = quarantine_batch(
        source="main-payer", billing_period="2026-03", load_id="L1", raw_files=q_raw, error="boom"
    )
    report_1 = (first / "report.json").read_text()
    q_raw[0].write_bytes(b"changed delivery")  # same name, new content
    quarantine_batch(
        source="main-payer", billing_period="2026-03", load_id="L1", raw_files=q_raw, report=_report()
    )
    assert (folder / "note-from-human.txt").read_text() == "keep me"
    assert (folder / "report.json").read_text() == report_1
    second = json.loads((folder / "report.1.json").read_text())
    assert second["error"] is None and second["validation"]["success"] is False
    assert (folder / "part-0.csv.gz").read_bytes() == b"\x1f\x8b raw bytes 0"
    assert (folder / "part-0.1.csv.gz").read_bytes() == b"changed delivery"
    assert not (folder / "manifest.1.json").exists(), "identical file is not stored twice"
    assert json.loads(report_1)["error"] == "boom"
    assert not [p for p in folder.iterdir() if ".part-" in p.name]


def test_missing_raw_file_is_recorded(finops_home, tmp_path):
    gone = tmp_path / "vanished.parquet"
    folder = quarantine_batch(
        source="s", billing_period="2026-01", load_id="L", raw_files=[gone], error="read failed"
    )
    rep = json.loads((folder / "report.json").read_text())
    assert rep["files"] == [{"original": str(gone), "name": "vanished.parquet", "missing": True}]
    assert rep["error"] == "read failed" and rep["validation"] is None


@pytest.mark.parametrize("source", ["../../etc", "a/b", "..", "x\n'; drop table y;--", "emoji 🚀"])
def test_hostile_source_stays_inside_quarantine(finops_home, source, q_raw):
    folder = quarantine_batch(source=source, billing_period="2026-03", load_id="../L", raw_files=q_raw[:1])
    root = (finops_home / "quarantine").resolve()
    assert folder.resolve().is_relative_to(root)
    assert folder.resolve().parent.parent.parent == root
    assert (folder / "report.json").exists()
    assert json.loads((folder / "report.json").read_text())["source"] == source


def test_rewritten_names_do_not_collide(finops_home):
    assert quarantine_dir("a/b", "2026-03", "L") != quarantine_dir("a_b", "2026-03", "L")
    assert quarantine_dir("a_b", "2026-03", "L").parent.parent.name == "a_b"


def test_bad_period_refused(finops_home):
    with pytest.raises(ValueError):
        quarantine_batch(source="s", billing_period="../2026", load_id="L", raw_files=[])
