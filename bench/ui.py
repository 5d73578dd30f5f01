"""FinOps UI latency on a large synthetic DuckDB warehouse (not a test: prints figures).

    .venv/bin/python bench/ui.py --days 30 --rows-per-day 1000000 [--repeat 7] [--keep DIR]
    .venv/bin/python bench/ui.py --days 365 --repeat 5 --skip-raw --keep DIR   # a year: 365M rows

Generates `days x rows-per-day` focus_costs rows with DuckDB SQL (range(), no Python loop),
4 sources, 30 services, 20 teams (tags JSON), 200k resources; showback_daily, tag_compliance
(50k resources), anomalies and policy_actions at realistic sizes; then times each page's query
(finops.ui.queries, the code behind the HTTP endpoints) p50 / p95 over `repeat` runs, with the
rollups (finops.ui.rollup) and, for two pages, without them (raw focus_costs scans).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))


def generate(wh, days: int, per_day: int, start: date) -> None:  # noqa: ANN001
    n = days * per_day
    wh.execute(f"""
        INSERT INTO focus_costs (billed_cost, effective_cost, list_cost, contracted_cost, billing_account_id,
            billing_currency, billing_period_start, billing_period_end, charge_category, charge_period_start,
            charge_period_end, invoice_issuer_name, provider_name, publisher_name, service_category, service_name,
            resource_id, tags, x_source, x_billing_period, x_provider, x_load_id)
        SELECT c, c * 0.9, c, c, 'acct-' || (i % 7), 'USD', date_trunc('month', ts), date_trunc('month', ts)
                 + INTERVAL 1 MONTH, 'Usage', ts, ts + INTERVAL 1 HOUR, p, p, p,
               CASE WHEN i % 30 < 12 THEN 'Compute' WHEN i % 30 < 20 THEN 'Storage' ELSE 'Databases' END,
               'service-' || (i % 30), 'r-' || (i % 200000),
               CASE WHEN i % 10 = 0 THEN '{{}}' ELSE '{{"team": "team-' || (i % 20) || '", "env": "prod"}}' END,
               'src-' || (i % 4), strftime(ts, '%Y-%m'), lower(p), 'bench'
          FROM (SELECT i, CAST(((i * 7919) % 100000) / 1000.0 AS DECIMAL(38,10)) AS c,
                       CASE i % 4 WHEN 0 THEN 'AWS' WHEN 1 THEN 'Google Cloud' WHEN 2 THEN 'Microsoft'
                            ELSE 'Lambda' END AS p,
                       TIMESTAMP '{start.isoformat()}' + to_days(CAST(i // {per_day} AS INTEGER))
                         + to_seconds(CAST((i % 86400) AS BIGINT)) AS ts
                  FROM range({n}) t(i)) g""")
    wh.execute("""INSERT INTO load_log (load_id, source, provider, billing_period, status, files, file_count,
                      row_count, started_at, finished_at)
                  SELECT 'bench-' || x_source || x_billing_period, x_source, 'x', x_billing_period, 'loaded', '[]',
                         0, 0, now()::TIMESTAMP, now()::TIMESTAMP
                    FROM (SELECT DISTINCT x_source, x_billing_period FROM focus_costs) p""")
    wh.execute(f"""INSERT INTO showback_daily (day, billing_period, cost_view, team, cost_centre, allocation, rule,
                       provider, billing_account_id, sub_account_id, service_name, line, currency, cost, computed_at)
                   SELECT DATE '{start.isoformat()}' + CAST(d AS INTEGER), strftime(DATE '{start.isoformat()}'
                          + CAST(d AS INTEGER), '%Y-%m'), v, 'team-' || t, 'CC', 'direct', 'tag:team', 'AWS', 'a',
                          'acct-' || s % 7, 'service-' || s, 'compute', 'USD', 100 + t + s, now()::TIMESTAMP
                     FROM range({days}) a(d), range(20) b(t), range(30) c(s), (VALUES ('amortised'), ('billed')) w(v)""")
    wh.execute("""INSERT INTO chargeback_monthly SELECT billing_period, cost_view, team, 'CC', 'USD', SUM(cost), 0, 0,
                       0, 0, 0, SUM(cost), SUM(cost) * 100, now()::TIMESTAMP FROM showback_daily GROUP BY 1, 2, 3""")
    snap = start + timedelta(days=days - 1)
    wh.execute(f"""INSERT INTO tag_compliance SELECT DATE '{snap.isoformat()}', 'require-team-tag', 'aws', 'acct',
                       'us-east-1', 'r-' || (i * 4), NULL, NULL, '["team"]', '[]', i % 10 >= 3, 'run', now()::TIMESTAMP
                     FROM range(50000) t(i)""")
    wh.execute("""INSERT INTO policy_actions (action_id, run_id, policy, policy_kind, provider, account, region,
                      resource_id, resource_name, owner, decision, action, result, reason, dry_run, evidence, created_at)
                    SELECT 'pa-' || i, 'run-' || (i // 100), 'idle-gpu', 'idle', 'aws', 'acct',
                      'us-east-1', 'r-' || i, NULL, NULL, 'stop', 'stop_instance', 'skipped_dry_run', 'idle', TRUE,
                      '{}', now()::TIMESTAMP - to_seconds(CAST(i AS BIGINT)) FROM range(100000) t(i)""")
    wh.execute(f"""INSERT INTO anomalies SELECT 'an-' || i, 'team', 'team-' || (i % 20), 'amortised', 'USD', 'open',
                       DATE '{start.isoformat()}', DATE '{start.isoformat()}', DATE '{start.isoformat()}', 100, 50, 50,
                       50, 1.0, 3.0, 'high', '[{{"key": "r-1", "actual": "1", "expected": "0", "delta": "1",
                       "share": 1.0}}]', now()::TIMESTAMP, now()::TIMESTAMP, NULL FROM range(2000) t(i)""")


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm (file cache, DuckDB buffer manager)
    xs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1000)
    xs.sort()
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return statistics.median(xs), p95


def _answer(page: object) -> str:
    """A page's JSON with the one field that names the backend taken out."""
    import json

    if isinstance(page, dict):
        page = {k: v for k, v in page.items() if k != "dialect"}
    return json.dumps(page, default=str, sort_keys=True)


def postgres_pages(path: Path, dsn: str, cases: list[tuple[str, Callable]], repeat: int) -> None:
    """The same pages on PostgreSQL: every table except focus_costs copied from the DuckDB bench
    warehouse into a fresh schema. focus_costs stays empty there (365M rows at ~56k rows/s COPY
    would take ~1.8 h on this machine); each page's answer is compared with DuckDB's, so a page
    that silently needed line items would show up as "differs"."""
    import uuid

    from finops.ui.db import Reader
    from finops.warehouse.duckdb_wh import DuckDBWarehouse
    from finops.warehouse.postgres_wh import PostgresWarehouse

    schema = f"ui_bench_{uuid.uuid4().hex[:8]}"
    pg = PostgresWarehouse.from_dsn(dsn, schema=schema)
    pg.migrate()
    src = DuckDBWarehouse(path, read_only=True)
    try:
        t = time.perf_counter()
        copied = 0
        tables = [
            r[0]
            for r in src.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "AND table_name NOT IN ('focus_costs', 'schema_migrations') ORDER BY 1"
            )
        ]
        for table in tables:
            data = src.query_arrow(f'SELECT * FROM "{table}"')
            if data.num_rows:
                pg.execute(f'DELETE FROM "{table}"')
                copied += pg.insert_arrow(table, data)
        pg.execute("ANALYZE")
        print(
            f"\nPostgreSQL schema {schema}: {copied:,} rows of {len(tables)} tables copied in "
            f"{time.perf_counter() - t:.1f} s (focus_costs left empty)"
        )
        print(f"{'endpoint query (PostgreSQL)':45s} {'p50 ms':>9s} {'p95 ms':>9s}  same answer as DuckDB")
        for name, fn in cases:
            p50, p95 = timed(lambda fn=fn: fn(Reader(pg)), repeat)
            same = _answer(fn(Reader(pg))) == _answer(fn(Reader(src)))
            print(f"{name:45s} {p50:9.1f} {p95:9.1f}  {'yes' if same else 'DIFFERS'}")
    finally:
        src.close()
        pg.execute(f'DROP SCHEMA "{schema}" CASCADE')
        pg.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--rows-per-day", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--keep", help="directory to keep the warehouse in (reused when it exists)")
    ap.add_argument(
        "--skip-raw", action="store_true", help="skip the two no-rollup raw scans (slow at a year)"
    )
    ap.add_argument(
        "--postgres-dsn", help="also time every page on PostgreSQL (tables the pages read, copied over)"
    )
    args = ap.parse_args()
    home = Path(args.keep or tempfile.mkdtemp(prefix="finops-bench-ui-"))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["FINOPS_HOME"] = str(home)
    from finops.ui import queries, rollup
    from finops.ui.db import open_reader
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    start = date(2025, 1, 1)
    end = start + timedelta(days=args.days)
    path = home / "warehouse.duckdb"
    wh = DuckDBWarehouse(path)
    wh.migrate()
    if not wh.query("SELECT COUNT(*) FROM focus_costs")[0][0]:  # a kept warehouse is reused
        t = time.perf_counter()
        generate(wh, args.days, args.rows_per_day, start)
        print(
            f"generated {args.days * args.rows_per_day:,} focus_costs rows in {time.perf_counter() - t:.1f} s"
        )
    n = wh.query("SELECT COUNT(*) FROM focus_costs")[0][0]
    t = time.perf_counter()
    wh.execute("DELETE FROM ui_rollup_state")
    wh.execute("DELETE FROM ui_cost_daily")
    done = rollup.refresh_stale(wh)
    roll_s = time.perf_counter() - t
    rows = wh.query("SELECT COUNT(*) FROM ui_cost_daily")[0][0]
    print(
        f"rollup: {len(done)} partitions, {rows:,} rollup rows from {n:,} line items in {roll_s:.1f} s "
        f"({n / roll_s / 1e6:.1f} M rows/s)"
    )
    wh.close()
    period = start.strftime("%Y-%m")
    P = queries.Page(1, 50)
    cases: list[tuple[str, Callable]] = [
        ("overview", lambda r: queries.overview(r)),
        (
            "cost by provider (rollup)",
            lambda r: queries.cost_timeseries(r, dim="provider", start=start, end=end),
        ),
        (
            "cost by service (rollup)",
            lambda r: queries.cost_timeseries(r, dim="service", start=start, end=end),
        ),
        (
            "cost by provider, month grain",
            lambda r: queries.cost_timeseries(r, dim="provider", grain="month", start=start, end=end),
        ),
        (
            "cost by team (showback_daily)",
            lambda r: queries.cost_timeseries(r, dim="team", start=start, end=end),
        ),
        ("showback table", lambda r: queries.showback(r, period=None, view="amortised", page=P)),
        (
            "showback team breakdown",
            lambda r: queries.team_breakdown(r, period=period, team="team-3", view="amortised", page=P),
        ),
        (
            "showback team resources",
            lambda r: queries.team_resources(
                r, period=period, team="team-3", view="amortised", tag_keys=["team", "Team"], page=P
            ),
        ),
        ("anomalies", lambda r: queries.anomalies(r, status=None, severity=None, page=P)),
        (
            "policy actions (page 100)",
            lambda r: queries.policy_actions(r, filters={}, page=queries.Page(100, 50)),
        ),
        (
            "tag compliance (+ month cost)",
            lambda r: queries.tag_compliance(r, day=None, tag_keys=["team", "Team"], page=P),
        ),
    ]
    print(
        f"\n{n:,} focus_costs rows ({args.days} days x {args.rows_per_day:,}/day), DuckDB, {os.cpu_count()} CPUs"
    )
    print(f"{'endpoint query':45s} {'p50 ms':>9s} {'p95 ms':>9s}")
    for name, fn in cases:

        def once(fn=fn) -> object:
            with open_reader() as r:
                return fn(r)

        p50, p95 = timed(once, args.repeat)
        print(f"{name:45s} {p50:9.1f} {p95:9.1f}")
    if args.postgres_dsn:
        postgres_pages(path, args.postgres_dsn, cases, args.repeat)
    if args.skip_raw:
        return
    wh = DuckDBWarehouse(path)
    wh.execute("DELETE FROM ui_rollup_state")  # every partition stale: the pages read focus_costs themselves
    wh.close()
    for name, fn in [
        (
            "cost by provider (NO rollup: raw scan)",
            lambda r: queries.cost_timeseries(r, dim="provider", start=start, end=end),
        ),
        (
            "showback team resources (NO rollup)",
            lambda r: queries.team_resources(
                r, period=period, team="team-3", view="amortised", tag_keys=["team", "Team"], page=P
            ),
        ),
    ]:

        def once_raw(fn=fn) -> object:
            with open_reader() as r:
                return fn(r)

        p50, p95 = timed(once_raw, 2)
        print(f"{name:45s} {p50:9.1f} {p95:9.1f}")
    if not args.keep:
        import shutil

        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
