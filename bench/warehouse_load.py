"""Measure `replace_partition` throughput (rows/s) for FOCUS parquet on DuckDB vs PostgreSQL.

    .venv/bin/python bench/warehouse_load.py --rows 1000000 [--pg-dsn "host=127.0.0.1 user=postgres dbname=test"]

Generates one billing period of N FOCUS rows (all columns, typed by finops.focus.schema),
loads it into a fresh DuckDB file and fresh PostgreSQL schemas, then loads it AGAIN (a
restatement: delete + insert of a populated partition), checks row count and BilledCost total,
and prints rows/s and peak RSS. PostgreSQL runs twice side by side: the CSV COPY path
(`copy_format="csv"`, the baseline) and the binary COPY path (the default), alternating
`--repeat` times, with the client's and the server backend's CPU seconds (read from /proc when
the server is local), which stay meaningful on a loaded machine where wall time does not.
Not a test: figures vary with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops.focus.schema import COLUMNS, Kind, arrow_schema

PERIOD = "2025-03"
SOURCE = "bench"


def _pool(kind: Kind, name: str, rng: np.random.Generator, size: int = 997) -> pa.Array:
    typ = arrow_schema().field(name).type
    if kind in (Kind.MONEY, Kind.QUANTITY):
        scale = typ.scale
        vals = [Decimal(int(v)).scaleb(-scale) for v in rng.integers(-10**11, 10**13, size)]
        return pa.array(vals, typ)
    if kind is Kind.TIMESTAMP:
        base = datetime(2025, 3, 1)
        return pa.array([base + timedelta(seconds=int(s)) for s in rng.integers(0, 30 * 86400, size)], typ)
    if kind is Kind.JSON:
        teams = ["ml", "web", "data", "infra", "o'neil \"quoted\"", "🚀"]
        return pa.array([json.dumps({"team": teams[i % len(teams)], "env": "prod", "cost_center": f"cc-{i}"})
                         for i in range(size)], typ)
    return pa.array([f"{name}-{i:05d}" for i in range(size)], typ)


def _fixed(name: str, n: int) -> pa.Array | None:
    fixed = {
        "x_source": SOURCE, "x_billing_period": PERIOD, "x_provider": "aws", "billing_currency": "USD",
        "charge_category": "Usage", "service_category": "Compute", "x_load_id": "bench-load",
        "billing_period_start": datetime(2025, 3, 1), "billing_period_end": datetime(2025, 4, 1),
    }
    if name not in fixed:
        return None
    typ = arrow_schema().field(name).type
    return pa.array([fixed[name]], typ).take(pa.array(np.zeros(n, dtype=np.int64)))


def write_focus_parquet(path: Path, rows: int, chunk: int = 200_000, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    schema = arrow_schema()
    pools = {c.snake: _pool(c.kind, c.snake, rng) for c in COLUMNS}
    with pq.ParquetWriter(path, schema) as w:
        done = 0
        while done < rows:
            n = min(chunk, rows - done)
            cols = []
            for c in COLUMNS:
                arr = _fixed(c.snake, n)
                if arr is None:
                    arr = pc.take(pools[c.snake], pa.array(rng.integers(0, len(pools[c.snake]), n)))
                cols.append(arr)
            w.write_table(pa.Table.from_arrays(cols, schema=schema))
            done += n


def _expected_total(path: Path) -> Decimal:
    t = pq.read_table(path, columns=["billed_cost"])
    return pc.sum(t.column(0).cast(pa.decimal128(38, 10))).as_py()


def _peak_rss_mb() -> float:
    from rss import peak_rss_mb  # bench/rss.py

    return peak_rss_mb()


def _server_cpu(pid: int | None) -> float:
    """CPU seconds of a local PostgreSQL backend (0 when it is not on this machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(label: str, wh, path: Path, rows: int, total: Decimal, backend_pid: int | None = None) -> list[float]:
    """First load + restatement; returns their wall seconds."""
    part = {"x_source": SOURCE, "x_billing_period": PERIOD}
    walls = []
    for attempt in ("first load", "restatement"):
        s0, c0, t0 = _server_cpu(backend_pid), time.process_time(), time.perf_counter()
        n = wh.replace_partition("focus_costs", part, [path])
        dt = time.perf_counter() - t0
        client, server = time.process_time() - c0, _server_cpu(backend_pid) - s0
        got_n, got_total = wh.query("SELECT count(*), sum(billed_cost) FROM focus_costs")[0]
        ok = n == rows and got_n == rows and Decimal(got_total) == total
        cpu = f"  cpu client={client:6.2f}s server={server:6.2f}s" if backend_pid else ""
        print(f"{label:<18} {attempt:<12} rows={rows:>10,} time={dt:7.2f}s  rows/s={rows / dt:>10,.0f}{cpu}  "
              f"peak_rss={_peak_rss_mb():6.0f} MB  check={'ok' if ok else 'MISMATCH'}", flush=True)
        if not ok:
            sys.exit(f"{label}: loaded {n}/{got_n} rows, total {got_total} != {total}")
        walls.append(dt)
    return walls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--pg-dsn", default="host=127.0.0.1 port=5432 user=postgres dbname=test")
    ap.add_argument("--skip-postgres", action="store_true")
    ap.add_argument("--skip-duckdb", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="PostgreSQL csv/binary rounds, alternated")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="wh-bench-") as tmp:
        path = Path(tmp) / "focus.parquet"
        t0 = time.perf_counter()
        write_focus_parquet(path, args.rows)
        total = _expected_total(path)
        print(f"generated {args.rows:,} FOCUS rows ({len(COLUMNS)} columns, {path.stat().st_size / 1e6:.1f} MB "
              f"parquet) in {time.perf_counter() - t0:.1f}s", flush=True)

        if not args.skip_duckdb:
            from finops.warehouse.duckdb_wh import DuckDBWarehouse

            with DuckDBWarehouse(Path(tmp) / "bench.duckdb") as dwh:
                dwh.migrate()
                _run("duckdb", dwh, path, args.rows, total)

        if not args.skip_postgres:
            from finops.warehouse.postgres_wh import PostgresWarehouse

            walls: dict[str, list[float]] = {"csv": [], "binary": []}
            for _ in range(args.repeat):
                for fmt in ("csv", "binary"):
                    schema = f"bench_{uuid.uuid4().hex[:10]}"
                    pwh = PostgresWarehouse.from_dsn(args.pg_dsn, schema=schema, copy_format=fmt)
                    try:
                        pwh.migrate()
                        pid = pwh.query("SELECT pg_backend_pid()")[0][0]
                        walls[fmt] += _run(f"postgresql {fmt}", pwh, path, args.rows, total, pid)
                    finally:
                        pwh.execute(f'DROP SCHEMA "{schema}" CASCADE')
                        pwh.close()
            ratio = sum(walls["csv"]) / sum(walls["binary"])
            print(f"postgresql binary vs csv: {ratio:.2f}x faster (wall, all loads; load avg "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)


if __name__ == "__main__":
    main()
