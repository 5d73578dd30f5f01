"""Measure `replace_partition` throughput (rows/s) for FOCUS parquet on DuckDB vs PostgreSQL.

    .venv/bin/python bench/warehouse_load.py --rows 1000000 [--pg-dsn "host=127.0.0.1 user=postgres dbname=test"]

Generates one billing period of N FOCUS rows (all columns, typed by finops.focus.schema),
loads it into a fresh DuckDB file and fresh PostgreSQL schemas, then loads it AGAIN (a
restatement of a populated partition), checks row count and BilledCost total, and prints rows/s
and peak RSS. PostgreSQL runs three ways side by side, alternating `--repeat` times:

  csv     focus_costs unpartitioned, DELETE + CSV COPY in one transaction (the baseline)
  binary  focus_costs unpartitioned, DELETE + binary COPY in one transaction
  swap    focus_costs partitioned (migration 5): binary COPY into a fresh table over
          --copy-connections connections, indexes built after, swapped in as the partition
          (a list, e.g. 2,4,8, runs one swap path per count: what more cores buy)

with the client's CPU seconds and the CPU seconds of every server backend the load used (its
sessions carry an application_name; read from /proc when the server is local), which stay
meaningful on a loaded machine where wall time does not. Ratios are of summed wall time.
Not a test: figures vary with the machine (free cores decide what parallel COPY gains).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
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
        vals = [Decimal(int(v)).scaleb(-scale) for v in rng.integers(-(10**11), 10**13, size)]
        return pa.array(vals, typ)
    if kind is Kind.TIMESTAMP:
        base = datetime(2025, 3, 1)
        return pa.array([base + timedelta(seconds=int(s)) for s in rng.integers(0, 30 * 86400, size)], typ)
    if kind is Kind.JSON:
        teams = ["ml", "web", "data", "infra", 'o\'neil "quoted"', "🚀"]
        return pa.array(
            [
                json.dumps({"team": teams[i % len(teams)], "env": "prod", "cost_center": f"cc-{i}"})
                for i in range(size)
            ],
            typ,
        )
    return pa.array([f"{name}-{i:05d}" for i in range(size)], typ)


def _fixed(name: str, n: int) -> pa.Array | None:
    fixed = {
        "x_source": SOURCE,
        "x_billing_period": PERIOD,
        "x_provider": "aws",
        "billing_currency": "USD",
        "charge_category": "Usage",
        "service_category": "Compute",
        "x_load_id": "bench-load",
        "billing_period_start": datetime(2025, 3, 1),
        "billing_period_end": datetime(2025, 4, 1),
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


class ServerCpu:
    """CPU seconds of the local server backends whose application_name is `app`, sampled every
    20 ms from another session (a backend that exits between samples loses under 20 ms)."""

    def __init__(self, dsn: str, app: str):
        import psycopg

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.app = app
        self.base: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        pids = [
            r[0]
            for r in self.conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [self.app]
            ).fetchall()
        ]
        for pid in pids:
            cpu = _server_cpu(pid)
            if cpu:
                self.last[pid] = cpu

    def start(self) -> None:
        self.last = {}
        self._sample()
        self.base = dict(self.last)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return sum(cpu - self.base.get(pid, 0.0) for pid, cpu in self.last.items())

    def close(self) -> None:
        self.conn.close()


def _unpartition(wh) -> None:
    """focus_costs back to the plain table of migration 1 (the paths before partitioning)."""
    from finops.warehouse.migrations.m0001_core import statements

    wh.execute("DROP TABLE focus_costs")
    for stmt in statements("postgres")[:3]:
        wh.execute(stmt)


def _run(
    label: str, wh, path: Path, rows: int, total: Decimal, sampler: ServerCpu | None = None
) -> list[float]:
    """First load + restatement; returns their wall seconds."""
    part = {"x_source": SOURCE, "x_billing_period": PERIOD}
    walls = []
    for attempt in ("first load", "restatement"):
        if sampler is not None:
            sampler.start()
        c0, t0 = time.process_time(), time.perf_counter()
        n = wh.replace_partition("focus_costs", part, [path])
        dt = time.perf_counter() - t0
        client, server = time.process_time() - c0, (sampler.stop() if sampler is not None else 0.0)
        got_n, got_total = wh.query("SELECT count(*), sum(billed_cost) FROM focus_costs")[0]
        ok = n == rows and got_n == rows and Decimal(got_total) == total
        cpu = f"  cpu client={client:6.2f}s server={server:6.2f}s" if sampler is not None else ""
        print(
            f"{label:<18} {attempt:<12} rows={rows:>10,} time={dt:7.2f}s  rows/s={rows / dt:>10,.0f}{cpu}  "
            f"peak_rss={_peak_rss_mb():6.0f} MB  check={'ok' if ok else 'MISMATCH'}",
            flush=True,
        )
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
    ap.add_argument("--repeat", type=int, default=1, help="PostgreSQL csv/binary/swap rounds, alternated")
    ap.add_argument(
        "--copy-connections",
        default="2",
        help="connections of the swap path's COPY; a comma list (2,4,8) runs the swap path once per count",
    )
    ap.add_argument("--row-group", type=int, default=200_000, help="rows per parquet row group")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="wh-bench-") as tmp:
        path = Path(tmp) / "focus.parquet"
        t0 = time.perf_counter()
        write_focus_parquet(path, args.rows, chunk=args.row_group)
        total = _expected_total(path)
        print(
            f"generated {args.rows:,} FOCUS rows ({len(COLUMNS)} columns, {path.stat().st_size / 1e6:.1f} MB "
            f"parquet) in {time.perf_counter() - t0:.1f}s",
            flush=True,
        )

        if not args.skip_duckdb:
            from finops.warehouse.duckdb_wh import DuckDBWarehouse

            with DuckDBWarehouse(Path(tmp) / "bench.duckdb") as dwh:
                dwh.migrate()
                _run("duckdb", dwh, path, args.rows, total)

        if not args.skip_postgres:
            from finops.warehouse.postgres_wh import PostgresWarehouse

            counts = [max(1, int(c)) for c in str(args.copy_connections).split(",") if c.strip()]
            modes = ["csv", "binary", *(f"swap x{n}" for n in counts)]
            walls: dict[str, list[float]] = {mode: [] for mode in modes}
            for _ in range(args.repeat):
                for mode in modes:
                    schema = f"bench_{uuid.uuid4().hex[:10]}"
                    app = f"finops-bench-{schema}"
                    swap = mode.startswith("swap")
                    pwh = PostgresWarehouse.from_dsn(
                        args.pg_dsn,
                        schema=schema,
                        copy_format=("csv" if mode == "csv" else "binary"),
                        copy_connections=int(mode.split("x")[1]) if swap else 1,
                        application_name=app,
                    )
                    sampler = ServerCpu(args.pg_dsn, app)
                    try:
                        pwh.migrate()
                        if not swap:
                            _unpartition(pwh)
                        walls[mode] += _run(f"postgresql {mode}", pwh, path, args.rows, total, sampler)
                    finally:
                        sampler.close()
                        pwh.execute(f'DROP SCHEMA "{schema}" CASCADE')
                        pwh.close()
            t = {mode: sum(w) for mode, w in walls.items()}
            ratios = "; ".join(
                f"{m}: {t['binary'] / t[m]:.2f}x binary, {t['csv'] / t[m]:.2f}x csv" for m in modes[2:]
            )
            print(
                f"postgresql binary vs csv: {t['csv'] / t['binary']:.2f}x faster; {ratios} (wall, all loads; "
                f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
                flush=True,
            )


if __name__ == "__main__":
    main()
