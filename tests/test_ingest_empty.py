"""A delivery whose data files hold no rows must not erase a month already loaded.

Its totals are 0 = 0, so every check passed and the partition was replaced with nothing: a
truncated re-delivery (a CUR part written empty, a BigQuery table recreated before its rows
arrived) silently wiped a month of cost from showback and reports. Such a delivery is now
quarantined with the loaded month kept; a month never loaded still records its empty load."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from finops.ingest import RawBatch, load_batch
from finops.sources import aws_cur
from tests.fixtures.cur_rows import cur_row, write_cur

CUR2 = aws_cur.converter_for("cur2")
PERIOD = "2025-03"


def _month(wh) -> tuple[int, D | None]:
    n, billed = wh.query(
        "SELECT count(*), sum(billed_cost) FROM focus_costs WHERE x_source = 'local' "
        "AND x_billing_period = ?",
        [PERIOD],
    )[0]
    return int(n), billed


@pytest.mark.parametrize("any_wh", ["duckdb", "postgres"], indirect=True)
@pytest.mark.parametrize("direct", [None, False], ids=["default", "staging"])
def test_an_empty_delivery_never_replaces_a_loaded_month(any_wh, tmp_path, finops_home, alerts, direct):
    good = write_cur(tmp_path / "good.parquet", [cur_row(line_item_unblended_cost=2.5)] * 3)
    assert (
        load_batch(any_wh, RawBatch("local", "aws", PERIOD, [good], "fp-good"), CUR2, direct=direct).status
        == "loaded"
    )

    empty = write_cur(tmp_path / "empty.parquet", [])
    entry = load_batch(any_wh, RawBatch("local", "aws", PERIOD, [empty], "fp-empty"), CUR2, direct=direct)

    assert entry.status == "quarantined", entry.message
    assert "holds no rows" in entry.message and "already loaded" in entry.message
    assert _month(any_wh) == (3, D("7.5"))
    assert [a.kind for a in alerts] == ["validation_failed"]


def test_an_empty_delivery_of_a_month_never_loaded_is_recorded(duckdb_wh, tmp_path, finops_home, alerts):
    empty = write_cur(tmp_path / "empty.parquet", [])
    entry = load_batch(duckdb_wh, RawBatch("local", "aws", PERIOD, [empty], "fp-empty"), CUR2)
    assert (entry.status, entry.row_count) == ("loaded", 0)
    assert _month(duckdb_wh) == (0, None) and alerts == []
