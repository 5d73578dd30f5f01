"""A quarantined batch keeps GX Data Docs of its validation beside its files, the quarantine
report links them, and the FinOps view serves them (and nothing else of the quarantine)."""

from __future__ import annotations

import json

import pytest
from fastapi import HTTPException

from finops.quality import quarantine_batch, validate_staging
from finops.ui.quarantine_docs import docs_path, docs_url, quarantine_docs
from tests.fixtures.quality import PERIOD, q_rows, q_write

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory):
    rows = q_rows(6)
    rows[0]["charge_category"] = HOSTILE  # outside the allowed set: quoted in the docs
    rows[1]["charge_period_end"] = rows[1]["charge_period_start"]  # a built-in pair expectation fails
    path = tmp_path_factory.mktemp("docs") / "staging.parquet"
    total = q_write(path, rows, strict=False)
    report = validate_staging([path], source="main", billing_period=PERIOD, raw_billed_total=total)
    assert report.success is False and report.data_docs is not None
    return report, path


def test_quarantined_batch_has_data_docs_linked_from_its_report(finops_home, broken_report, monkeypatch):
    report, path = broken_report
    folder = quarantine_batch(
        source="main", billing_period=PERIOD, load_id="L1", raw_files=[path], report=report
    )
    index = folder / "data_docs" / "index.html"
    assert index.is_file() and (folder / "staging.parquet").is_file()
    pages = [p for p in (folder / "data_docs" / "validations").rglob("*.html")]
    assert len(pages) == 2  # the BOOLEAN_ONLY checkpoint run and the SUMMARY run of the failed rules
    html = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    assert "focus_staging" in html and "charge_category" in html
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # quoted, inert
    md = (folder / "quarantine-report.md").read_text(encoding="utf-8")
    assert "[data_docs/index.html](data_docs/index.html)" in md
    meta = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert meta["data_docs"] == "data_docs/index.html"

    # a second quarantine of the same load keeps the first site (append-only)
    again = quarantine_batch(
        source="main", billing_period=PERIOD, load_id="L1", raw_files=[path], report=report
    )
    assert again == folder and (folder / "data_docs.1" / "index.html").is_file() and index.is_file()

    # the FinOps view serves the site, and the alert's link points at it
    assert docs_path(index) == "/quarantine-docs/main/2026-03/L1/data_docs/index.html"
    served = quarantine_docs("main", PERIOD, "L1", "data_docs", "index.html")
    assert str(served.path) == str(index.resolve()) and "sandbox" in served.headers["content-security-policy"]
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com")
    assert (
        docs_url(index)
        == "https://airflow.example.com/finops/quarantine-docs/main/2026-03/L1/data_docs/index.html"
    )


@pytest.mark.parametrize(
    "docs, path",
    [
        ("data_docs", "../staging.parquet"),  # the billing file beside the docs
        ("data_docs", "../../../../../etc/passwd"),
        ("reports", "index.html"),  # not a data_docs folder
        ("data_docs", "missing.html"),
    ],
)
def test_view_serves_nothing_but_data_docs(finops_home, broken_report, docs, path):
    report, raw = broken_report
    quarantine_batch(source="main", billing_period=PERIOD, load_id="L2", raw_files=[raw], report=report)
    with pytest.raises(HTTPException) as e:
        quarantine_docs("main", PERIOD, "L2", docs, path)
    assert e.value.status_code == 404


def test_a_report_without_validation_has_no_docs_link(finops_home, tmp_path):
    raw = tmp_path / "part.csv"
    raw.write_text("a,b\n")
    folder = quarantine_batch(
        source="main", billing_period=PERIOD, load_id="L3", raw_files=[raw], error="unreadable"
    )
    assert not (folder / "data_docs").exists()
    assert "Data Docs" not in (folder / "quarantine-report.md").read_text(encoding="utf-8")
