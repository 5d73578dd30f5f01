"""ui.rollup: a partition's rollups summed from the staging parquet its load copied in equal,
row for row and to the cent, the rollups the warehouse computes from focus_costs, on both
engines, with hostile tag keys and values, several days, currencies and teams."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

from finops.ui.rollup import refresh_partition, stale_partitions
from tests.fixtures.focus_rows import focus_row, write_focus

KEYS = ["team", 'Te"am', "équipe"]


def _rows() -> list[dict]:
    teams = [
        {"team": "ml"},
        {'Te"am': "'; drop table x;--"},
        {"équipe": "données 🚀"},
        {"other": "x"},
        None,
        {"team": "=cmd|' /C calc'!A0", "équipe": "shadowed"},
    ]
    rows = []
    for i in range(60):
        tags = teams[i % len(teams)]
        rows.append(
            focus_row(
                "aws-main",
                "2026-03",
                i,
                charge_period_start=datetime(2026, 3, 1 + i % 5, i % 24),
                charge_period_end=datetime(2026, 3, 1 + i % 5, i % 24, 59),
                billed_cost=Decimal(f"{i}.0123456789"),
                effective_cost=Decimal(f"{i % 7}.5000000001"),
                billing_currency="EUR" if i % 4 == 0 else "USD",
                service_name="Amazon S3" if i % 3 == 0 else "Amazon EC2",
                resource_id=f"i-{i % 9:08x}",
                resource_name=None if i % 2 else f"name-{i % 9}",
                tags=None if tags is None else json.dumps(tags),
            )
        )
    return rows


def _snapshot(wh) -> tuple[list[tuple], list[tuple]]:
    daily = wh.query("SELECT * FROM ui_cost_daily ORDER BY 1, 2, 3, 4, 5, 6, 7")
    resources = wh.query("SELECT * FROM ui_resource_monthly ORDER BY 1, 2, 3, 4, 5, 6, 7, 8")
    return [tuple(r) for r in daily], [tuple(r) for r in resources]


def test_rollups_from_staging_equal_rollups_from_the_warehouse(any_wh, tmp_path):
    staging = write_focus(tmp_path / "staging.parquet", _rows())
    any_wh.replace_partition(
        "focus_costs", {"x_source": "aws-main", "x_billing_period": "2026-03"}, [staging]
    )

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


def _wait_for(dsn: str, app: str, n: int) -> None:
    """Until `n` sessions named `app` wait on a lock."""
    import time

    import psycopg

    deadline = time.monotonic() + 20
    with psycopg.connect(dsn, autocommit=True) as c:
        while (
            c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event_type = 'Lock'",
                [app],
            ).fetchone()[0]
            < n
        ):
            assert time.monotonic() < deadline, f"never saw {n} blocked sessions"
            time.sleep(0.05)


def test_two_refreshes_of_a_partition_at_once_leave_one_rollup(pg_wh, pg_dsn, tmp_path):
    """PostgreSQL: a billing DAG's refresh_stale and another's mapped load refresh one partition
    at the same moment. Each must see the other's committed rows, never add its own beside them."""
    import threading

    import psycopg

    from finops.warehouse.postgres_wh import PostgresWarehouse

    staging = write_focus(tmp_path / "staging.parquet", _rows())
    pg_wh.replace_partition("focus_costs", {"x_source": "aws-main", "x_billing_period": "2026-03"}, [staging])
    refresh_partition(pg_wh, "aws-main", "2026-03", KEYS)
    once = _snapshot(pg_wh)

    # a third session holds ui_resource_monthly, so the first refresh stops part-way, holding its
    # DELETE of ui_cost_daily, while the second one starts
    gate = psycopg.connect(pg_dsn)
    gate.execute(f'LOCK TABLE "{pg_wh.schema}".ui_resource_monthly IN EXCLUSIVE MODE')
    errors: list[BaseException] = []
    app = f"rollup-{pg_wh.schema}"

    def refresh() -> None:
        wh = PostgresWarehouse.from_dsn(pg_dsn, schema=pg_wh.schema, application_name=app)
        try:
            refresh_partition(wh, "aws-main", "2026-03", KEYS)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            wh.close()

    threads = [threading.Thread(target=refresh) for _ in range(2)]
    threads[0].start()
    _wait_for(pg_dsn, app, 1)
    threads[1].start()
    _wait_for(pg_dsn, app, 2)
    gate.rollback()
    gate.close()
    for t in threads:
        t.join(60)

    assert errors == []
    assert _snapshot(pg_wh) == once
