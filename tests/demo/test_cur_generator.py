"""The CUR 2.0 generator: deterministic, every line-item type, exact totals, legacy formats."""

from __future__ import annotations

import json
from decimal import Decimal as D

import duckdb
import pyarrow.parquet as pq

from finops.demo.cur_generator import GenSpec, expected_totals, write_cur2_period, write_legacy_period

ALL_TYPES = {
    "Usage",
    "DiscountedUsage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "SavingsPlanRecurringFee",
    "SavingsPlanUpfrontFee",
    "RIFee",
    "Fee",
    "Tax",
    "Credit",
    "Refund",
    "BundledDiscount",
}


def _sum(path) -> tuple[int, D]:
    n, s = (
        duckdb.connect()
        .execute(
            f"SELECT count(*), sum(CAST(line_item_unblended_cost AS DECIMAL(38,10))) FROM read_parquet('{path}')"
        )
        .fetchone()
    )
    return n, D(s)


def test_cur2_period_is_realistic_and_exact(tmp_path):
    spec = GenSpec("2025-02", rows=5000, seed=11, chunk_rows=1500)
    d = write_cur2_period(tmp_path, spec, prefix="exports/x", bucket="bkt")
    f = tmp_path / d.data_keys[0]
    assert pq.ParquetFile(f).metadata.num_row_groups >= 4  # written in row-group chunks
    assert _sum(f) == (d.totals.rows, d.totals.billed_total)
    assert set(d.totals.rows_by_type) == ALL_TYPES
    con = duckdb.connect()
    types = dict(
        con.execute(
            f"SELECT line_item_line_item_type, count(*) FROM read_parquet('{f}') GROUP BY 1"
        ).fetchall()
    )
    assert types == d.totals.rows_by_type
    fam = {
        r[0]
        for r in con.execute(f"SELECT DISTINCT product_instance_type FROM read_parquet('{f}')").fetchall()
    }
    assert {"p4d.24xlarge", "p5.48xlarge", "g5.2xlarge", "g6.xlarge"} <= fam
    spot = con.execute(
        f"SELECT count(*) FROM read_parquet('{f}') WHERE line_item_usage_type LIKE '%SpotUsage%'"
    ).fetchone()
    untagged = con.execute(
        f"SELECT count(*) FROM read_parquet('{f}') WHERE cardinality(resource_tags) = 0"
    ).fetchone()
    accounts = con.execute(
        f"SELECT count(DISTINCT line_item_usage_account_id) FROM read_parquet('{f}')"
    ).fetchone()
    assert spot[0] > 0 and 0 < untagged[0] < d.totals.rows and accounts[0] >= 3
    neg = con.execute(
        f"SELECT sum(CAST(line_item_unblended_cost AS DECIMAL(38,10))) FROM read_parquet('{f}') "
        "WHERE line_item_line_item_type IN ('SavingsPlanCoveredUsage', 'SavingsPlanNegation')"
    ).fetchone()
    assert neg[0] == 0  # every covered row has its negation
    manifest = json.loads((tmp_path / d.manifest_key).read_text())
    assert manifest["executionId"] == d.execution_id
    assert manifest["dataFiles"] == [f"s3://bkt/exports/x/{d.data_keys[0]}"]
    assert d.manifest_key == "metadata/BILLING_PERIOD=2025-02/finops-export-Manifest.json"


def test_deterministic_and_restatement_differs(tmp_path):
    a = expected_totals(GenSpec("2025-02", rows=2000, seed=5))
    b = expected_totals(GenSpec("2025-02", rows=2000, seed=5))
    c = expected_totals(GenSpec("2025-02", rows=2000, seed=5, restatement=1))
    assert a == b and a.billed != c.billed
    w1 = write_cur2_period(tmp_path / "1", GenSpec("2025-02", rows=2000, seed=5))
    w2 = write_cur2_period(tmp_path / "2", GenSpec("2025-02", rows=2000, seed=5))
    assert w1.totals == a
    t1 = pq.read_table(tmp_path / "1" / w1.data_keys[0])
    t2 = pq.read_table(tmp_path / "2" / w2.data_keys[0])
    assert t1.equals(t2)


def test_legacy_formats_carry_the_same_money(tmp_path):
    spec = GenSpec("2025-02", rows=800, seed=5)
    csv = write_legacy_period(tmp_path / "c", spec, fmt="csv", prefix="cur/r", report_name="r")
    par = write_legacy_period(tmp_path / "p", spec, fmt="parquet", report_name="r")
    assert csv.totals == par.totals == expected_totals(spec)
    m = json.loads((tmp_path / "c" / csv.manifest_key).read_text())
    assert m["assemblyId"] == csv.execution_id and m["reportKeys"] == [f"cur/r/{csv.data_keys[0]}"]
    assert (tmp_path / "c" / "20250201-20250301" / csv.execution_id / "r-Manifest.json").exists()
    n, s = (
        duckdb.connect()
        .execute(
            f'SELECT count(*), sum(CAST("lineItem/UnblendedCost" AS DECIMAL(38,10))) '
            f"FROM read_csv('{tmp_path / 'c' / csv.data_keys[0]}', all_varchar = true)"
        )
        .fetchone()
    )
    assert (n, D(s)) == (csv.totals.rows, csv.totals.billed_total)


def test_a_spike_moves_one_teams_rows_to_one_day_and_keeps_the_totals(tmp_path):
    """The demo's anomaly: rows move to the last day, none are added, so the invoice total and
    the month's rows are the plain month's, and the moved cost is that team's p5 on-demand."""
    from finops.demo.cur_generator import TEAMS, Spike

    plain = GenSpec("2025-03", rows=4000, seed=5)
    spiked = GenSpec(
        "2025-03", rows=4000, seed=5, spike=Spike("p5_od", None, 1.0, team=TEAMS.index("ml-prod"))
    )
    assert expected_totals(spiked).billed_total == expected_totals(plain).billed_total

    def last_day(spec: GenSpec) -> dict[str, D]:
        d = write_cur2_period(tmp_path / str(spec.spike is not None), spec, prefix="x", bucket="b")
        return {
            t: D(str(c))
            for t, c in duckdb.connect()
            .execute(
                "SELECT resource_tags['user_team'], sum(CAST(line_item_unblended_cost AS DECIMAL(38,10))) "
                f"FROM read_parquet('{tmp_path / str(spec.spike is not None) / d.data_keys[0]}') "
                "WHERE line_item_usage_start_date >= TIMESTAMP '2025-03-31' AND line_item_usage_type LIKE '%BoxUsage:p5%' "
                "AND line_item_line_item_type = 'Usage' GROUP BY 1"
            )
            .fetchall()
        }

    before, after = last_day(plain), last_day(spiked)
    assert after["ml-prod"] > 10 * before.get("ml-prod", D("0.01"))
    assert {t: c for t, c in after.items() if t != "ml-prod"} == {
        t: c for t, c in before.items() if t != "ml-prod"
    }
