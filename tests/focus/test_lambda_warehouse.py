"""Lambda lifetimes: m0500 tables on both backends and hourly FOCUS rows loaded exactly."""

from __future__ import annotations

from datetime import UTC

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.demo import lambda_generator as gen
from finops.export import export_focus
from finops.focus.lambda_cloud import CONVERTER, billable_interval, observe
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch
from tests.fixtures.focus_load import load_twice


def _interval_rows():
    """A generated day of polls folded into lifetimes: the raw intervals the source writes."""
    s = gen.generate()
    known = {}
    for t, resp in zip(s.polls, s.responses, strict=True):
        known.update(observe(known, resp["data"], t))
    rows = []
    for lt in known.values():
        a, b = billable_interval(lt)
        rows.append(
            {
                "instance_id": lt.instance_id,
                "name": lt.name,
                "instance_type": lt.instance_type,
                "region": lt.region,
                "price_cents_per_hour": lt.price_cents_per_hour,
                "bill_start": a.astimezone(UTC).replace(tzinfo=None),
                "bill_end": b.astimezone(UTC).replace(tzinfo=None),
                "account_name": "acme",
            }
        )
    return rows


def test_lambda_into_warehouse(any_wh, tmp_path):
    assert any_wh.table_exists("lambda_instance_lifetimes") and any_wh.table_exists("lambda_polls")
    rows = _interval_rows()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "l.parquet")
    first, second, (total, n) = load_twice(
        any_wh, CONVERTER, [tmp_path / "l.parquet"], source="lam", provider="lambda"
    )
    assert first.status == second.status == "loaded", first.message
    assert total == gen.expected_total(
        [(r["bill_start"], r["bill_end"], r["price_cents_per_hour"]) for r in rows]
    )
    assert n == 8 + 15 + 3  # H100 02-09h, A10 01-15h, A100 11-13h


@pytest.mark.slow
@pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)
def test_lambda_focus_export_passes_focus_validator(duckdb_wh, tmp_path):
    """A generated day of polls, loaded, exported: nothing but the InvoiceId OR branch fails; the
    converter names its variant and what it derived."""
    import re

    import duckdb

    rows = _interval_rows()
    path = tmp_path / "l.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    batch = RawBatch(
        source="lam", provider="lambda", billing_period="2026-10", files=[path], fingerprint="v1"
    )
    entry = load_batch(duckdb_wh, batch, CONVERTER)
    assert entry.status == "loaded", entry.message
    assert CONVERTER.variant(list(rows[0])).startswith("Lambda Cloud instance lifetimes")
    con = duckdb.connect()
    con.execute(f"CREATE VIEW raw AS {CONVERTER.reader_sql([str(path)])}")
    assert dict(con.execute(CONVERTER.derived_counts_sql("raw")).fetchall())["ServiceSubcategory"] == len(
        rows
    )

    out = tmp_path / "focus.parquet"
    assert export_focus(duckdb_wh, "2026-10", out) == 8 + 15 + 3
    res = run_focus_validator(out)
    fails = [line for line in res.output.splitlines() if "FAIL" in line]
    assert res.failed == 1 and "InvoiceId-C-004-C" in fails[0], "\n".join(fails)
    status = {m.group(1): m.group(2) for m in re.finditer(r"(InvoiceId-C-\d{3}-\w): (PASS|FAIL)", res.output)}
    assert status["InvoiceId-C-003-C"] == "PASS"
