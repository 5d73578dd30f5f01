"""A billing load stopped by its task's execution_timeout is a failed run, not a bad delivery.

Airflow's timeout raises AirflowTaskTimeout from a SIGALRM handler. While DuckDB runs a query,
its Python client calls that handler, cancels the query and raises RuntimeError('Query
interrupted') in its place (the AirflowTaskTimeout is lost). The spine read that like bad input:
the delivery was quarantined (alert, raw files copied, load_log 'quarantined') and the billing
task failed with AirflowFailException, i.e. without the retries a timeout is given."""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest

from finops.ingest import LoadInterrupted, RawBatch, load_batch
from finops.sources import aws_cur
from tests.fixtures.cur_rows import cur_row, write_cur

CUR2 = aws_cur.converter_for("cur2")
PERIOD = "2025-03"


@pytest.fixture(scope="module")
def big_cur(tmp_path_factory) -> Path:
    """800k CUR rows: converting them takes seconds (~6 s here), far longer than the 1 s timeout below."""
    d = tmp_path_factory.mktemp("big-cur")
    one = write_cur(d / "one.parquet", [cur_row(line_item_unblended_cost=1.25)])
    big = d / "big.parquet"
    duckdb.sql(f"COPY (SELECT t.* FROM read_parquet('{one}') t, range(800000)) TO '{big}' (FORMAT parquet)")
    return big


@pytest.mark.parametrize("direct", [False, None], ids=["staging", "direct"])
def test_a_timed_out_load_fails_without_quarantine(duckdb_wh, tmp_path, finops_home, alerts, big_cur, direct):
    from airflow.sdk.exceptions import AirflowTaskTimeout
    from airflow.sdk.execution_time.timeout import timeout

    good = write_cur(tmp_path / "good.parquet", [cur_row(line_item_unblended_cost=2.5)])
    assert load_batch(duckdb_wh, RawBatch("local", "aws", PERIOD, [good], "fp-good"), CUR2).status == "loaded"

    with pytest.raises((LoadInterrupted, AirflowTaskTimeout)), timeout(1):
        load_batch(duckdb_wh, RawBatch("local", "aws", PERIOD, [big_cur], "fp-big"), CUR2, direct=direct)

    statuses = [
        r[0]
        for r in duckdb_wh.query(
            "SELECT status FROM load_log WHERE billing_period = ? ORDER BY finished_at", [PERIOD]
        )
    ]
    assert "quarantined" not in statuses, statuses
    assert alerts == []
    assert not (finops_home / "quarantine").exists() or not any((finops_home / "quarantine").rglob("*"))
    assert duckdb_wh.query(
        "SELECT count(*), sum(billed_cost) FROM focus_costs WHERE x_source = 'local' AND x_billing_period = ?",
        [PERIOD],
    ) == [(1, D("2.5"))]
