"""One generated CUR 2.0 month (moto S3 -> FOCUS -> PostgreSQL warehouse), loaded three ways:

1. `spine`   - the load_partition work called in one fresh process, no Airflow around it,
               timed stage by stage (imports, S3 download, DuckDB conversion, GX import,
               validation, PostgreSQL COPY, UI rollups from the staging file): where the time
               of a load goes;
2. `dagtest` - `finops_billing_aws` through Airflow's `dag.test()` (SQLite metadata DB, tasks
               in-process), as the demo and most tests run it;
3. `celery`  - the same DAG on the real CeleryExecutor topology (PostgreSQL metadata DB,
               Redis, api-server, scheduler, dag-processor, triggerer, one worker: the
               process set of tests/integration/airflow_topology.py), triggered through the
               REST API; per-task queue / run times from the API and the task log.

Each mode loads into its own fresh warehouse schema and is checked against the generator's
invoice total to the cent. Needs PostgreSQL (127.0.0.1:5432, or FINOPS_TEST_PG_DSN) and Redis.

    .venv/bin/python bench/celery_vs_dagtest.py                    # 1M rows
    .venv/bin/python bench/celery_vs_dagtest.py --rows 10000000    # the issue's size (RAM / time)
    .venv/bin/python bench/celery_vs_dagtest.py --modes spine,celery --json out.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.integration.* (the topology helpers)

PERIOD = "2026-10"
SOURCE = "bench-payer"
BUCKET = "bench-billing"
PREFIX = "exports/bench"
PG_DSN = os.environ.get("FINOPS_TEST_PG_DSN", "host=127.0.0.1 port=5432 user=postgres dbname=test")
REDIS_URL = os.environ.get("FINOPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
CENT = Decimal("0.01")
FIXED_STAGES = (
    "import_finops_airflow_hooks_s",
    "gx_import_s",
    "warehouse_connect_migrate_s",
)  # once per process
ROW_STAGES = (
    "s3_manifest_and_download_s",
    "duckdb_convert_s",
    "gx_validate_s",
    "postgres_replace_partition_s",
    "ui_rollups_from_staging_s",
)


def _load_avg() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _write_config(path: Path, endpoint: str, schema: str) -> Path:
    import yaml

    path.write_text(
        yaml.safe_dump(
            {
                "warehouse": {"conn_id": "finops_warehouse", "schema": schema},
                "sources": {
                    "aws": [
                        {
                            "name": SOURCE,
                            "conn_id": "aws_default",
                            "bucket": BUCKET,
                            "prefix": PREFIX,
                            "format": "cur2",
                        }
                    ]
                },
            }
        )
    )
    return path


def _conn_env(endpoint: str) -> dict[str, str]:
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(PG_DSN)
    wh = {
        "conn_type": "postgres",
        "host": info.get("host", "127.0.0.1"),
        "port": int(info.get("port", 5432)),
        "login": info.get("user", "postgres"),
        "schema": info.get("dbname", "test"),
    }
    if info.get("password"):
        wh["password"] = info["password"]
    aws = {
        "conn_type": "aws",
        "login": "bench",
        "password": "bench",
        "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    return {
        "AIRFLOW_CONN_FINOPS_WAREHOUSE": json.dumps(wh),
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(aws),
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def _warehouse_total(schema: str) -> tuple[int, Decimal]:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        n, billed = conn.execute(
            f'SELECT count(*), coalesce(sum(billed_cost), 0) FROM "{schema}".focus_costs '  # noqa: S608
            "WHERE x_source = %s AND x_billing_period = %s",
            [SOURCE, PERIOD],
        ).fetchone()
    return n, Decimal(billed)


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _cur_month(root: Path, rows: int) -> dict:
    """Generate one CUR 2.0 month under `root` once (cached: a 1M-row month takes minutes)."""
    from finops.demo.cur_generator import GenSpec, write_cur2_period

    meta = root / "delivery.json"
    if meta.exists():
        return json.loads(meta.read_text())
    if root.exists():
        shutil.rmtree(root)
    # the seed differs per size: each size is its own delivery (own execution id, own raw cache)
    d = write_cur2_period(root, GenSpec(period=PERIOD, rows=rows, seed=rows), prefix=PREFIX, bucket=BUCKET)
    info = {
        "root": str(root),
        "keys": [*d.data_keys, d.manifest_key],
        "rows": d.totals.rows,
        "billed": str(d.totals.billed_total.quantize(CENT)),
        "parquet_mb": round(sum((root / k).stat().st_size for k in d.data_keys) / 2**20, 1),
    }
    meta.write_text(json.dumps(info))
    return info


# --------------------------------------------------------------------------- 1. spine, stage by stage
def _stage_peak(t: dict, stage: str) -> None:
    """Peak RSS of the stage that just ended, then a fresh high-water mark, so each stage's
    peak is its own and the process peak is their maximum (bench/rss.py)."""
    from rss import current_rss_mb, peak_rss_mb, reset_peak

    peak = peak_rss_mb()
    t.setdefault("stage_peak_rss_mb", {})[stage[:-2]] = round(peak)
    t.setdefault("stage_end_rss_mb", {})[stage[:-2]] = round(current_rss_mb())
    t["peak_rss_mb"] = max(t.get("peak_rss_mb", 0), round(peak))
    reset_peak()


def _spine_child(env: dict[str, str], q: mp.Queue) -> None:
    import logging

    os.environ.update(env)
    for noisy in ("great_expectations", "werkzeug", "py.warnings"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    t = {}
    t0 = time.perf_counter()
    from finops.config import get_config
    from finops.ingest import ConvertContext, convert_to_staging, make_load_id
    from finops.sources import registry
    from finops.warehouse import connect

    t["import_finops_airflow_hooks_s"] = time.perf_counter() - t0
    _stage_peak(t, "import_finops_airflow_hooks_s")
    cfg = get_config()
    src = cfg.source(SOURCE)
    s = time.perf_counter()
    (batch,) = registry.plan_batches("aws", src, PERIOD)
    t["s3_manifest_and_download_s"] = time.perf_counter() - s
    _stage_peak(t, "s3_manifest_and_download_s")
    conv = registry.converter_for("aws", src)
    load_id = make_load_id(batch.source, batch.billing_period, batch.fingerprint)
    ctx = ConvertContext(batch.source, batch.provider, batch.billing_period, load_id)
    staging = Path(env["FINOPS_HOME"]) / "staging" / f"{load_id}.parquet"
    s = time.perf_counter()
    res = convert_to_staging(batch, conv, ctx, staging)
    t["duckdb_convert_s"] = time.perf_counter() - s
    _stage_peak(t, "duckdb_convert_s")
    s = time.perf_counter()
    import great_expectations  # noqa: F401 - timed on its own: a fixed cost per process

    from finops.quality import validate_staging  # GX is imported lazily inside

    t["gx_import_s"] = time.perf_counter() - s
    _stage_peak(t, "gx_import_s")
    s = time.perf_counter()
    report = validate_staging(
        [staging],
        source=batch.source,
        billing_period=batch.billing_period,
        raw_billed_total=res.raw_billed_total,
    )
    t["gx_validate_s"] = time.perf_counter() - s
    _stage_peak(t, "gx_validate_s")
    assert report.success, report.failures
    s = time.perf_counter()
    wh = connect(cfg)
    t["warehouse_connect_migrate_s"] = time.perf_counter() - s
    _stage_peak(t, "warehouse_connect_migrate_s")
    s = time.perf_counter()
    rows = wh.replace_partition("focus_costs", {"x_source": SOURCE, "x_billing_period": PERIOD}, [staging])
    t["postgres_replace_partition_s"] = time.perf_counter() - s
    _stage_peak(t, "postgres_replace_partition_s")
    s = time.perf_counter()  # what load_partition does next (its after_load hook)
    from finops.ui.rollup import refresh_partition

    refresh_partition(wh, SOURCE, PERIOD, rows_from=[staging])
    t["ui_rollups_from_staging_s"] = time.perf_counter() - s
    _stage_peak(t, "ui_rollups_from_staging_s")
    wh.close()
    t["total_s"] = time.perf_counter() - t0
    t["rows"] = rows
    q.put(t)


def run_spine(base_env: dict[str, str], schema: str, home: Path) -> dict:
    home.mkdir(parents=True, exist_ok=True)
    env = dict(
        base_env,
        FINOPS_CONFIG=str(_write_config(home / "spine.yaml", "", schema)),
        FINOPS_HOME=str(home / "spine-home"),
    )
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_spine_child, args=(env, q))
    p.start()
    out = q.get(timeout=3600)
    p.join()
    return out


# --------------------------------------------------------------------------- 2. dag.test()
def _sqlite_home(home: Path, env: dict[str, str]) -> dict[str, str]:
    af = home / "airflow-dagtest"
    (af / "plugins").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW__")}
    env.update(
        {
            "AIRFLOW_HOME": str(af),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(af / "plugins"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{af}/airflow.db",
        }
    )
    template = REPO / ".finops-test" / "airflow-template.db"
    if template.exists():
        shutil.copy(template, af / "airflow.db")
    else:
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True, capture_output=True
        )
    return env


def run_dagtest(base_env: dict[str, str], schema: str, home: Path) -> dict:
    env = _sqlite_home(home, dict(base_env))
    env["FINOPS_CONFIG"] = str(_write_config(home / "dagtest.yaml", "", schema))
    env["FINOPS_HOME"] = str(home / "dagtest-home")
    log = home / "dagtest.log"
    t0 = time.perf_counter()
    with log.open("w") as fh:
        rc = subprocess.run(
            [
                sys.executable,
                "-m",
                "finops.demo.dagtest",
                "finops_billing_aws",
                json.dumps({"billing_period": PERIOD, "source": SOURCE}),
            ],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    wall = time.perf_counter() - t0
    text = log.read_text()
    marker = "FINOPS_DAGTEST finops_billing_aws state="
    if rc != 0 or marker not in text:
        raise RuntimeError(f"dag.test failed (exit {rc}); see {log}:\n{text[-3000:]}")
    state, secs = text.rsplit(marker, 1)[1].split()[:2]
    return {
        "state": state,
        "process_wall_s": wall,
        "dag_test_s": float(secs.split("=")[1]),
        "process_start_and_dagbag_s": wall - float(secs.split("=")[1]),
    }


# --------------------------------------------------------------------------- 3. celery
def _ts(value: str | None) -> float | None:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


def _task_log_marks(path: Path) -> dict[str, float]:
    """Seconds from the first task-log line to the milestones of load_partition."""
    from datetime import datetime

    marks: dict[str, float] = {}
    first = None
    wanted = {
        "Worker startup parse complete": "dag_file_parsed",
        "loading ": "s3_downloaded_conversion_starts",
        "validated ": "validated",
        ": loaded ": "loaded",
        "Done. Returned value": "returned",
    }
    for line in path.read_text(errors="replace").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        ts = datetime.fromisoformat(d["timestamp"].replace("Z", "+00:00")).timestamp()
        first = first or ts
        ev = str(d.get("event", ""))
        for needle, name in wanted.items():
            if needle in ev and name not in marks:
                marks[name] = round(ts - first, 1)
        if "Skipping registering function" in ev and "gx_import_started" not in marks:
            marks["gx_import_started"] = round(ts - first, 1)
    return marks


def run_celery(base_env: dict[str, str], schema: str, home: Path, admin_dsn: str) -> dict:
    from tests.integration.airflow_topology import Topology

    cfg = _write_config(home / "celery.yaml", "", schema)
    extra = {
        "FINOPS_CONFIG": str(cfg),
        "FINOPS_HOME": str(home / "celery-home"),
        **{k: v for k, v in base_env.items() if k.startswith("AIRFLOW_CONN_")},
    }
    topo = Topology(
        home=home / "topology",
        admin_dsn=admin_dsn,
        redis_url=REDIS_URL,
        extra_env=extra,
        worker_concurrency=2,
    )
    t0 = time.perf_counter()
    try:
        topo.start(timeout=300)
        topo.wait_worker_ready(topo.workers[0], timeout=180)
        topo.wait_dag("finops_billing_aws", timeout=300)
        topo.unpause("finops_billing_aws")
        up = time.perf_counter() - t0
        t1 = time.perf_counter()
        run_id = topo.trigger("finops_billing_aws", {"billing_period": PERIOD, "source": SOURCE})
        state = topo.wait_run("finops_billing_aws", run_id, timeout=3600)
        wall = time.perf_counter() - t1
        run = topo.api("GET", f"/dags/finops_billing_aws/dagRuns/{run_id}")
        tis = topo.task_instances("finops_billing_aws", run_id)
        run_start = _ts(run.get("start_date")) or 0.0
        tasks = {}
        for ti in sorted(tis, key=lambda x: x.get("start_date") or ""):
            q, s, e = _ts(ti.get("queued_when")), _ts(ti.get("start_date")), _ts(ti.get("end_date"))
            tasks[ti["task_id"]] = {
                "queued_after_run_start_s": round(q - run_start, 1) if q else None,
                "queue_to_start_s": round(s - q, 1) if q and s else None,
                "run_s": round(e - s, 1) if s and e else None,
            }
        logs = list((topo.home / "airflow" / "logs").rglob("task_id=load_partition/**/attempt=1.log"))
        marks = _task_log_marks(logs[0]) if logs else {}
        return {
            "state": state,
            "services_up_s": round(up, 1),
            "trigger_to_success_s": round(wall, 1),
            "tasks": tasks,
            "load_partition_log_marks_s": marks,
        }
    finally:
        topo.stop()


# --------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--rows",
        default="200000,1000000",
        help="comma-separated sizes: the spine runs at each (a line through the two largest "
        "extrapolates to 10M rows); dag.test and Celery run at the largest",
    )
    ap.add_argument("--modes", default="spine,dagtest,celery")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "finops-bench-cur"))
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per S3 request otherwise

    from tests.integration.airflow_topology import admin_dsn_from, check_postgres, check_redis, free_port

    admin_dsn = admin_dsn_from(PG_DSN)
    check_postgres(admin_dsn)
    if "celery" in modes:
        from urllib.parse import urlsplit

        u = urlsplit(REDIS_URL)
        check_redis(u.hostname or "127.0.0.1", u.port or 6379)

    sizes = sorted({int(x) for x in args.rows.split(",") if x.strip()})
    out: dict = {"sizes": sizes, "period": PERIOD, "cpus": os.cpu_count(), "load_avg_start": _load_avg()}
    deliveries = {}
    for rows in sizes:
        t = time.perf_counter()
        d = _cur_month(Path(args.cache) / f"rows{rows}", rows)
        deliveries[rows] = d
        out[f"cur_{rows}"] = {
            "rows": d["rows"],
            "parquet_mb": d["parquet_mb"],
            "billed": d["billed"],
            "generate_or_cache_s": round(time.perf_counter() - t, 1),
        }
        print(
            f"CUR month: {d['rows']:,} rows, {d['parquet_mb']} MB parquet, billed {d['billed']} "
            f"({time.perf_counter() - t:.1f} s); load average {_load_avg()}",
            flush=True,
        )

    port = free_port()
    port_srv = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    port_srv.start()
    endpoint = f"http://127.0.0.1:{port}"
    base_env = {**os.environ, **_conn_env(endpoint)}
    home = Path(tempfile.mkdtemp(prefix="bench-celery-"))
    schemas: list[str] = []
    try:
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        s3.create_bucket(Bucket=BUCKET)
        runs = [("spine", rows) for rows in sizes if "spine" in modes]
        runs += [(m, sizes[-1]) for m in modes if m != "spine"]
        uploaded = None
        for mode, rows in runs:
            delivery = deliveries[rows]
            if uploaded != rows:  # the newest manifest for the period is what every mode loads
                for rel in delivery["keys"]:
                    s3.upload_file(str(Path(delivery["root"]) / rel), BUCKET, f"{PREFIX}/{rel}")
                uploaded = rows
            expected = Decimal(delivery["billed"])
            schema = f"bench_{mode}_{uuid.uuid4().hex[:8]}"
            schemas.append(schema)
            print(f"\n== {mode} {rows:,} rows (load average {_load_avg()})", flush=True)
            t = time.perf_counter()
            if mode == "spine":
                res = run_spine(base_env, schema, home / f"spine-{rows}")
            elif mode == "dagtest":
                res = run_dagtest(base_env, schema, home)
            elif mode == "celery":
                res = run_celery(base_env, schema, home, admin_dsn)
            else:
                raise SystemExit(f"unknown mode {mode}")
            res["mode_wall_s"] = round(time.perf_counter() - t, 1)
            n, billed = _warehouse_total(schema)
            res["warehouse_rows"] = n
            res["billed_matches_generator"] = billed.quantize(CENT) == expected
            res["load_avg_end"] = _load_avg()
            out[f"{mode}_{rows}"] = res
            print(json.dumps(res, indent=1, default=str), flush=True)
            if not res["billed_matches_generator"]:
                print(f"!! {mode}: warehouse billed {billed} != generator {expected}", flush=True)
    finally:
        port_srv.stop()
        for schema in schemas:
            _drop_schema(schema)
        shutil.rmtree(home, ignore_errors=True)

    out["load_avg_end"] = _load_avg()
    print("\n== summary")
    spines = [(r, out[f"spine_{r}"]) for r in sizes if f"spine_{r}" in out]
    for rows, sp in spines:
        print(
            f"spine {rows:>10,}: " + ", ".join(f"{k[:-2]} {v:.1f}" for k, v in sp.items() if k.endswith("_s"))
        )
    if len(spines) >= 2:
        a, b = spines[-2][1], spines[-1][1]
        n1, n2 = a["rows"], b["rows"]
        est = {k: b[k] for k in FIXED_STAGES}
        for k in ROW_STAGES:  # a line through both sizes; never below the largest measurement
            slope = max((b[k] - a[k]) / (n2 - n1), 0.0)
            est[k] = b[k] + slope * (10_000_000 - n2)
        out["spine_10M_linear_estimate_s"] = {k: round(v, 1) for k, v in est.items()}
        print(
            "10M rows, linear through the two largest sizes: "
            + ", ".join(f"{k[:-2]} ~{v:.0f}" for k, v in est.items())
            + f"; total ~{sum(est.values()):.0f} s"
        )
    for mode in ("dagtest", "celery"):
        key = f"{mode}_{sizes[-1]}"
        if key in out:
            wall = out[key]["process_wall_s"] if mode == "dagtest" else out[key]["trigger_to_success_s"]
            print(f"{mode} {sizes[-1]:,} rows: {wall:.1f} s end to end")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return (
        0
        if all(
            v.get("billed_matches_generator")
            for k, v in out.items()
            if isinstance(v, dict) and "billed_matches_generator" in v
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
