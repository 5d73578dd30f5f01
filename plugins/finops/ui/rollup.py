"""The daily cost rollup (`ui_cost_daily`): focus_costs summed per day, provider, service and
currency, one (source, billing period) partition at a time.

Why: a year at 1M line items a day is 365M rows; the charts need a few thousand sums. A
partition is *stale* when load_log shows a load of it newer than the rollup (or it was never
rolled up); readers (finops.ui.queries) then sum that partition from focus_costs directly, so
the view is always right and fast once `refresh_stale` has run (call it after billing loads).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from finops.warehouse.base import Warehouse
from finops.warehouse.dialect import json_get

if TYPE_CHECKING:
    import pyarrow as pa

# load_log statuses that changed the rows of a partition
_CHANGING = ("loaded", "empty")

_AGG = """SELECT CAST(charge_period_start AS DATE) AS day, x_source, x_billing_period, provider_name,
       service_name, service_category, billing_currency,
       COALESCE(SUM(billed_cost), 0) AS billed_cost, COALESCE(SUM(effective_cost), 0) AS effective_cost,
       COUNT(*) AS row_count
  FROM focus_costs WHERE x_source = ? AND x_billing_period = ?
 GROUP BY 1, 2, 3, 4, 5, 6, 7"""


def stale_partitions(wh: Warehouse) -> list[tuple[str, str]]:
    """(source, billing period) pairs whose newest load is newer than their rollup."""
    marks = ", ".join("?" for _ in _CHANGING)
    rows = wh.query(
        f"""SELECT l.source, l.billing_period FROM load_log l
             LEFT JOIN ui_rollup_state s ON s.x_source = l.source AND s.x_billing_period = l.billing_period
            WHERE l.status IN ({marks})
            GROUP BY l.source, l.billing_period, s.loaded_at
           HAVING s.loaded_at IS NULL OR MAX(l.finished_at) > s.loaded_at
            ORDER BY 1, 2""",
        list(_CHANGING),
    )
    return [(r[0], r[1]) for r in rows]


def team_tag_keys() -> list[str]:
    """The accepted spellings of the team tag (allocation rules `tag_keys.team`)."""
    try:
        from finops.allocation.settings import allocation_rules

        return list(allocation_rules().tag_keys.get("team") or ["team"])
    except Exception:  # noqa: BLE001 - a broken allocation config must not stop the rollup
        return ["team"]


def team_expr(dialect: str, keys: list[str]) -> tuple[str, list[str]]:
    """SQL (and its params) for the team of a focus_costs row: the first accepted tag spelling present."""
    parts, params = [], []
    for k in keys or ["team"]:
        sql, p = json_get(dialect, "tags", k)
        parts.append(sql)
        params += p
    return f"COALESCE({', '.join(parts)})", params


def _resource_sql(dialect: str, keys: list[str], source: str, period: str) -> tuple[str, list[str]]:
    team, params = team_expr(dialect, keys)
    return (
        f"""SELECT x_source, x_billing_period, provider_name, resource_id, MIN(resource_name),
                       MIN(service_name), team, billing_currency,
                       COALESCE(SUM(billed_cost), 0), COALESCE(SUM(effective_cost), 0)
                  FROM (SELECT x_source, x_billing_period, provider_name, resource_id, resource_name, service_name,
                               {team} AS team, billing_currency, billed_cost, effective_cost
                          FROM focus_costs WHERE x_source = ? AND x_billing_period = ?) f
                 GROUP BY x_source, x_billing_period, provider_name, resource_id, team, billing_currency""",
        [*params, source, period],
    )


DAILY_COLUMNS = (
    "day",
    "x_source",
    "x_billing_period",
    "provider_name",
    "service_name",
    "service_category",
    "billing_currency",
    "billed_cost",
    "effective_cost",
    "row_count",
)
RESOURCE_COLUMNS = (
    "x_source",
    "x_billing_period",
    "provider_name",
    "resource_id",
    "resource_name",
    "service_name",
    "team",
    "billing_currency",
    "billed_cost",
    "effective_cost",
)


def _from_parquet(
    files: Sequence[Path], keys: list[str], source: str, period: str
) -> tuple[pa.Table, pa.Table]:
    """Both rollups of a partition computed by DuckDB from the FOCUS parquet the load just
    copied in: the very queries the warehouse would run (DuckDB dialect), over a view named
    focus_costs. Why: on PostgreSQL the two queries re-read the whole partition, 54-84 s for a
    10M-row month, 2.2 s this way (docs/deploy.md section 7)."""
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    # an in-memory engine with the warehouse's settings (UTC, FINOPS_DUCKDB_* memory and thread caps)
    with DuckDBWarehouse(":memory:") as engine:
        con = engine.con
        con.read_parquet([str(f) for f in files], union_by_name=True).create_view("focus_costs")
        daily = con.sql(_AGG, params=[source, period]).to_arrow_table().rename_columns(list(DAILY_COLUMNS))
        sql, params = _resource_sql("duckdb", keys, source, period)
        resources = con.sql(sql, params=params).to_arrow_table().rename_columns(list(RESOURCE_COLUMNS))
    return daily, resources


def refresh_partition(
    wh: Warehouse,
    source: str,
    period: str,
    team_keys: list[str] | None = None,
    *,
    rows_from: Sequence[Path] | None = None,
) -> int:
    """Rebuild one partition of the rollups in one transaction. Returns daily rollup rows written.

    `rows_from`: the FOCUS parquet files holding exactly this partition's rows (the staging
    files its load just copied in); the sums are then computed from them, not re-read from the
    warehouse."""
    marks = ", ".join("?" for _ in _CHANGING)
    loaded = wh.query(
        f"SELECT MAX(finished_at) FROM load_log WHERE source = ? AND billing_period = ? AND status IN ({marks})",
        [source, period, *_CHANGING],
    )[0][0]
    keys = team_keys if team_keys is not None else team_tag_keys()
    computed = _from_parquet(rows_from, keys, source, period) if rows_from else None
    now = datetime.now(UTC).replace(tzinfo=None)
    # two refreshes of one partition at once (a load's own, another DAG's refresh_stale) queue
    # here: unlocked, the second DELETE misses the first's new rows and both insert
    with wh.partition_lock("ui_rollups", {"x_source": source, "x_billing_period": period}):
        wh.execute("BEGIN")
        try:
            wh.execute(
                "DELETE FROM ui_cost_daily WHERE x_source = ? AND x_billing_period = ?", [source, period]
            )
            if computed:
                wh.insert_arrow("ui_cost_daily", computed[0])
            else:
                wh.execute(f"INSERT INTO ui_cost_daily {_AGG}", [source, period])
            if wh.table_exists("ui_resource_monthly"):
                wh.execute(
                    "DELETE FROM ui_resource_monthly WHERE x_source = ? AND x_billing_period = ?",
                    [source, period],
                )
                if computed:
                    wh.insert_arrow("ui_resource_monthly", computed[1])
                else:
                    sql, params = _resource_sql(wh.dialect, keys, source, period)
                    wh.execute(f"INSERT INTO ui_resource_monthly {sql}", params)
            n = wh.query(
                "SELECT COUNT(*) FROM ui_cost_daily WHERE x_source = ? AND x_billing_period = ?",
                [source, period],
            )[0][0]
            wh.execute(
                "DELETE FROM ui_rollup_state WHERE x_source = ? AND x_billing_period = ?", [source, period]
            )
            wh.execute(
                "INSERT INTO ui_rollup_state (x_source, x_billing_period, loaded_at, refreshed_at, row_count) "
                "VALUES (?, ?, ?, ?, ?)",
                [source, period, loaded or now, now, n],
            )
            wh.execute("COMMIT")
        except BaseException:
            wh.execute("ROLLBACK")
            raise
        return int(n)


def refresh_stale(wh: Warehouse) -> list[tuple[str, str]]:
    """Bring every stale partition up to date; returns the partitions refreshed."""
    done = []
    for source, period in stale_partitions(wh):
        refresh_partition(wh, source, period)
        done.append((source, period))
    return done
