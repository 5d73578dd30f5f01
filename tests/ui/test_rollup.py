"""ui.rollup: a partition's rollups summed from the staging parquet its load copied in equal,
row for row and to the cent, the rollups the warehouse computes from focus_costs, on both
engines, with hostile tag keys and values, several days, currencies and teams."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

from finops.ui.rollup import refresh_partition, stale_partitions
from tests.warehouse.focus_rows import focus_row, write_focus

KEYS = ["team", 'Te"am', "équipe"]


def _rows() -> list[dict]:
    teams = [{"team": "ml"}, {'Te"am': "'; drop table x;--"}, {"équipe": "données 🚀"}, {"other": "x"}, None,
             {"team": "=cmd|' /C calc'!A0", "équipe": "shadowed"}]
    rows = []
    for i in range(60):
        tags = teams[i % len(teams)]
        rows.append(focus_row(
            "aws-main", "2026-03", i,
            charge_period_start=datetime(2026, 3, 1 + i % 5, i % 24),
            charge_period_end=datetime(2026, 3, 1 + i % 5, i % 24, 59),
            billed_cost=Decimal(f"{i}.0123456789"), effective_cost=Decimal(f"{i % 7}.5000000001"),
            billing_currency="EUR" if i % 4 == 0 else "USD",
            service_name="Amazon S3" if i % 3 == 0 else "Amazon EC2",
            resource_id=f"i-{i % 9:08x}", resource_name=None if i % 2 else f"name-{i % 9}",
            tags=None if tags is None else json.dumps(tags),
        ))
    return rows


def _snapshot(wh) -> tuple[list[tuple], list[tuple]]:
    daily = wh.query("SELECT * FROM ui_cost_daily ORDER BY 1, 2, 3, 4, 5, 6, 7")
    resources = wh.query("SELECT * FROM ui_resource_monthly ORDER BY 1, 2, 3, 4, 5, 6, 7, 8")
    return [tuple(r) for r in daily], [tuple(r) for r in resources]


def test_rollups_from_staging_equal_rollups_from_the_warehouse(any_wh, tmp_path):
    staging = write_focus(tmp_path / "staging.parquet", _rows())
    any_wh.replace_partition("focus_costs", {"x_source": "aws-main", "x_billing_period": "2026-03"}, [staging])

    n_sql = refresh_partition(any_wh, "aws-main", "2026-03", KEYS)
    from_warehouse = _snapshot(any_wh)
    n_files = refresh_partition(any_wh, "aws-main", "2026-03", KEYS, rows_from=[staging])
    from_files = _snapshot(any_wh)

    assert n_sql == n_files == len(from_warehouse[0]) > 10
    assert from_files == from_warehouse
    teams = {r[6] for r in from_files[1]}
    assert {"ml", "'; drop table x;--", "données 🚀", "=cmd|' /C calc'!A0", None} <= teams
    assert sum(r[7] for r in from_files[0]) == sum(Decimal(f"{i}.0123456789") for i in range(60))
    assert stale_partitions(any_wh) == []
