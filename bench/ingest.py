"""Ingest benchmark: one generated CUR 2.0 month through the real spine, side by side with
(a) a DuckDB scan-only baseline over the same file (read every column, sum / measure it) and
(b) a straightforward pandas implementation of the same mapping. The month is also put, with
its manifest, into a moto S3 server and loaded from there (`aws_cur.fetch_batch` through the
Amazon provider's S3Hook, then `ingest.load_batch`): extract -> FOCUS -> validate -> load.

Each measurement runs in its own fresh process, so peak RSS is per stage, not cumulative.

    .venv/bin/python bench/ingest.py              # 2M rows
    .venv/bin/python bench/ingest.py --rows 10000000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path


def _rss_mb() -> float:
    from rss import peak_rss_mb  # bench/rss.py: VmHWM, not ru_maxrss (which a spawned child inherits)

    return peak_rss_mb()


def _scan(path: str, q: mp.Queue) -> None:
    import duckdb

    con = duckdb.connect()
    cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    parts = []
    for name, typ, *_ in cols:
        ident = '"' + name + '"'
        if typ.startswith("MAP"):
            parts.append(f"sum(cardinality({ident}))")
        elif typ in ("DOUBLE", "BIGINT", "INTEGER") or typ.startswith("DECIMAL"):
            parts.append(f"sum({ident})")
        elif typ.startswith("TIMESTAMP"):
            parts.append(f"max({ident})")
        else:
            parts.append(f"sum(length({ident}))")
    t = time.perf_counter()
    con.execute(f"SELECT count(*), {', '.join(parts)} FROM read_parquet('{path}')").fetchall()
    q.put({"seconds": time.perf_counter() - t, "rss_mb": _rss_mb()})


def _map_only(path: str, q: mp.Queue) -> None:
    """The converter's SELECT alone: all 65 FOCUS columns computed (hashed so none is pruned),
    nothing validated or stored. The ceiling for any load that maps with this SQL."""
    import duckdb

    from finops.focus.aws_cur_mapping import Cur2Converter
    from finops.ingest import ConvertContext, RawBatch, focus_select

    con = duckdb.connect(config={"memory_limit": "1GB"})
    batch = RawBatch("bench", "aws", PERIOD, [Path(path)], "bench")
    t = time.perf_counter()
    sql = focus_select(con, batch, Cur2Converter(), ConvertContext("bench", "aws", PERIOD, "bench"))
    con.execute(f"SELECT count(*), bit_xor(hash(COLUMNS(*))) FROM ({sql})").fetchall()
    q.put({"seconds": time.perf_counter() - t, "rss_mb": _rss_mb()})


def _spine(path: str, home: str, direct: bool, q: mp.Queue) -> None:
    """The real `ingest.load_batch` on one delivery, into a fresh DuckDB warehouse."""
    os.environ["FINOPS_HOME"] = home
    t = time.perf_counter()
    import great_expectations  # noqa: F401 - a one-off per task process, reported on its own line

    gx_import = time.perf_counter() - t
    from finops.focus.aws_cur_mapping import Cur2Converter
    from finops.ingest import RawBatch, load_batch
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    wh = DuckDBWarehouse(warehouse_path())
    wh.migrate()
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    entry = load_batch(
        wh, RawBatch("bench", "aws", PERIOD, [Path(path)], "bench"), Cur2Converter(), direct=direct
    )
    seconds = time.perf_counter() - t0
    wh.close()
    q.put(
        {
            "seconds": seconds,
            "timings": entry.timings,
            "status": entry.status,
            "rows": entry.row_count,
            "message": entry.message,
            "billed": str(entry.focus_billed_total),
            "raw": str(entry.raw_billed_total),
            "rss_mb": _rss_mb(),
            "rss_before": rss0,
            "gx_import_s": gx_import,
        }
    )


def _extract_load(endpoint: str, home: str, q: mp.Queue) -> None:
    """The whole path from S3: newest manifest, download (moto server, loopback), then the direct load."""
    import json

    os.environ.update(
        {
            "FINOPS_HOME": home,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(
                {
                    "conn_type": "aws",
                    "login": "bench",
                    "password": "bench",
                    "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"},
                }
            ),
        }
    )
    import great_expectations  # noqa: F401 - outside the timing, as in _spine

    from finops.config import AwsSource
    from finops.focus.aws_cur_mapping import Cur2Converter
    from finops.ingest import load_batch
    from finops.paths import warehouse_path
    from finops.sources.aws_cur import fetch_batch, s3_client
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    src = AwsSource(name="bench", conn_id="aws_default", bucket=BUCKET, prefix=PREFIX, format="cur2")
    client = s3_client(src.conn_id)  # the hook's connection lookup: once per task, not per month
    wh = DuckDBWarehouse(warehouse_path())
    wh.migrate()
    t0 = time.perf_counter()
    batch = fetch_batch(src, PERIOD, client=client)
    extract = time.perf_counter() - t0
    assert batch is not None
    entry = load_batch(wh, batch, Cur2Converter(), direct=True)
    seconds = time.perf_counter() - t0
    wh.close()
    q.put(
        {
            "seconds": seconds,
            "extract_s": extract,
            "status": entry.status,
            "rows": entry.row_count,
            "billed": str(entry.focus_billed_total),
            "raw": str(entry.raw_billed_total),
            "message": entry.message,
            "timings": entry.timings,
            "rss_mb": _rss_mb(),
        }
    )


def _serve_s3(root: Path, keys: list[str]):
    """A moto S3 server on loopback holding the delivery (data file + manifest) under PREFIX."""
    import logging
    import socket

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )
    s3.create_bucket(Bucket=BUCKET)
    for rel in keys:  # data first, manifest last, as AWS delivers
        s3.upload_file(str(root / rel), BUCKET, f"{PREFIX}/{rel}")
    return server, endpoint


def _pandas(path: str, out: str, q: mp.Queue) -> None:
    """The same full mapping in plain pandas (bench/pandas_focus.py; parity proven by
    tests/bench/test_pandas_focus_parity.py): read + map + write parquet, no validation or load."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pandas_focus import run

    q.put({**run(path, out, billing_period=PERIOD), "rss_mb": _rss_mb()})


PERIOD = "2025-01"
BUCKET = "bench-billing"
PREFIX = "exports/bench"


def _run(target, *args) -> dict:
    # spawn, not fork: a forked child shares the parent's pages (the generator's) and counts them
    # in its RSS; a spawned one starts clean, and bench/rss.py reads its own peak, not ru_maxrss
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    res = q.get()
    p.join()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--skip-pandas", action="store_true")
    ap.add_argument(
        "--skip-staging", action="store_true", help="skip the staging-parquet path (PostgreSQL's)"
    )
    ap.add_argument(
        "--skip-s3", action="store_true", help="skip the load from a moto S3 server (extract included)"
    )
    ap.add_argument(
        "--data-dir",
        default=None,
        help="keep the generated month here and reuse it on later runs with the same --rows",
    )
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

    work = Path(args.workdir or tempfile.mkdtemp(prefix="finops-bench-"))
    path, rows, billed, delivery = _generated(
        Path(args.data_dir) if args.data_dir else work / "export", args.rows
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    scan = _run(_scan, path)
    runs = {"direct": _run(_spine, path, str(work / "home-direct"), True)}
    if not args.skip_staging:
        runs["staging"] = _run(_spine, path, str(work / "home-staging"), False)
    if not args.skip_s3:
        server, endpoint = _serve_s3(Path(delivery["root"]), delivery["keys"])
        try:
            runs["from S3"] = _run(_extract_load, endpoint, str(work / "home-s3"))
        finally:
            server.stop()
    print(f"{'path':<44}{'seconds':>9}{'rows/s':>14}{'peak RSS MB':>13}")

    def line(label: str, seconds: float, rss: float | None = None) -> None:
        mb = f"{rss:>13.0f}" if rss is not None else f"{'':>13}"
        print(f"{label:<44}{seconds:>9.2f}{rows / seconds:>14,.0f}{mb}")

    line("DuckDB scan-only baseline (read + sum all)", scan["seconds"], scan["rss_mb"])
    copy = _run(_copy, path, str(work / "copy.duckdb"))
    line("DuckDB copy-only floor (raw -> table as is)", copy["seconds"], copy["rss_mb"])
    mapped = _run(_map_only, path)
    line("FOCUS mapping only (computed, not stored)", mapped["seconds"], mapped["rss_mb"])
    for name, r in runs.items():
        if "extract_s" in r:
            line(f"  {name}: extract (manifest + download)", r["extract_s"])
        for phase, secs in r["timings"].items():
            if phase != "total_s":
                line(f"  {name}: {phase[:-2]}", secs)
        what = "fetch_batch + load_batch" if "extract_s" in r else "ingest.load_batch"
        line(f"spine, {name} ({what})", r["seconds"], r["rss_mb"])
    print(
        f"(RSS is the process peak; {runs['direct']['rss_before']:.0f} MB before loading, imports incl. GX; "
        f"importing GX once per task process: {runs['direct']['gx_import_s']:.1f} s, not counted above)"
    )
    best = runs["direct"]
    if not args.skip_pandas:
        pdr = _run(_pandas, path, str(work / "pandas.parquet"))
        line("pandas (read + same mapping + write)", pdr["seconds"], pdr["rss_mb"])
        print(
            f"spine (direct) vs pandas: {pdr['seconds'] / best['seconds']:.1f}x faster, "
            f"{pdr['rss_mb'] / best['rss_mb']:.1f}x less memory"
        )
    if "staging" in runs:
        print(f"direct vs staging path: {runs['staging']['seconds'] / best['seconds']:.1f}x")
    if "from S3" in runs:
        print(
            f"from S3, extract included, vs scan baseline: {scan['seconds'] / runs['from S3']['seconds'] * 100:.0f}%"
        )
    print(
        f"spine (direct) vs scan baseline: {scan['seconds'] / best['seconds'] * 100:.0f}% of its rows/s; "
        f"vs copy-only floor: {copy['seconds'] / best['seconds'] * 100:.0f}%; the mapping alone reaches "
        f"{scan['seconds'] / mapped['seconds'] * 100:.0f}% of the scan"
    )
    for name, r in runs.items():
        cents = Decimal("0.01")
        ok = (
            r["status"] == "loaded"
            and r["billed"] == r["raw"]
            and Decimal(r["billed"]).quantize(cents) == billed.quantize(cents)
        )
        print(
            f"{name}: {r['status']} {r['rows']:,} FOCUS rows, billed {r['billed']} (raw {r['raw']}, generator "
            f"{billed}) reconciled={ok} {r['message'] or ''}"
        )


def _copy(path: str, db: str, q: mp.Queue) -> None:
    """The least any loader must do: store the raw rows, unmapped, in a DuckDB table."""
    import duckdb

    con = duckdb.connect(db)
    con.execute("SET preserve_insertion_order = false; SET memory_limit = '1GB'")
    t = time.perf_counter()
    con.execute("CREATE OR REPLACE TABLE raw AS SELECT * FROM read_parquet(?)", [path])
    con.execute("CHECKPOINT")
    q.put({"seconds": time.perf_counter() - t, "rss_mb": _rss_mb()})
    con.close()


def _generated(root: Path, rows: int) -> tuple[str, int, Decimal, dict]:
    """(data file, exact row count, exact billed total, delivery: root + keys), generating only
    when not cached in root. The manifest points at s3://BUCKET/PREFIX/..., where --s3 serves it."""
    import json

    from finops.demo.cur_generator import GenSpec, write_cur2_period

    meta = root / f"bench-{rows}.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        if Path(m["path"]).exists() and m.get("bucket") == BUCKET and m.get("prefix") == PREFIX:
            print(f"reusing {m['rows']:,} generated rows from {m['path']}")
            return m["path"], m["rows"], Decimal(m["billed"]), m["delivery"]
    t = time.perf_counter()
    d = write_cur2_period(
        root / f"rows-{rows}", GenSpec(PERIOD, rows=rows, seed=1), prefix=PREFIX, bucket=BUCKET
    )
    path = str(root / f"rows-{rows}" / d.data_keys[0])
    size = Path(path).stat().st_size / 2**20
    print(
        f"generated {d.totals.rows:,} rows ({size:.0f} MiB parquet) in {time.perf_counter() - t:.1f}s; "
        f"expected billed {d.totals.billed_total}"
    )
    delivery = {"root": str(root / f"rows-{rows}"), "keys": [*d.data_keys, d.manifest_key]}
    meta.write_text(
        json.dumps(
            {
                "path": path,
                "rows": d.totals.rows,
                "billed": str(d.totals.billed_total),
                "bucket": BUCKET,
                "prefix": PREFIX,
                "delivery": delivery,
            }
        )
    )
    return path, d.totals.rows, d.totals.billed_total, delivery


if __name__ == "__main__":
    main()
