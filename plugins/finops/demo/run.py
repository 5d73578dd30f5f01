"""`finops demo` (behind `make demo`): realistic exports -> local cloud emulators -> the real
billing DAGs through Airflow (SQLite metadata DB) -> DuckDB warehouse -> a short cost summary.

Nothing here reaches the internet: AWS is a moto server on loopback; the other providers'
emulators are started by their seeders when those sources are configured.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path

from finops.orchestration.periods import period_of, shift
from finops.paths import REPO_ROOT, finops_home

log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_periods(months: int, today: date | None = None) -> list[str]:
    """The `months` full months before the current one (closed periods, like a real backfill)."""
    cur = period_of(today or datetime.now(UTC).date())
    return [shift(cur, -i) for i in range(months, 0, -1)]


def prepare_airflow_env(home: Path) -> Path:
    """Point Airflow at a SQLite metadata DB and this repo's dags/ inside FINOPS_HOME.
    Must run before anything imports airflow."""
    af = home / "airflow"
    af.mkdir(parents=True, exist_ok=True)
    os.environ["AIRFLOW_HOME"] = str(af)
    os.environ.setdefault("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{af}/airflow.db")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO_ROOT / "dags")
    # The package is an installed plugin (entry point); an empty plugins folder keeps Airflow from
    # exec-ing every module of plugins/ as a top-level file.
    os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(af / "plugins")
    os.environ.setdefault("AIRFLOW__LOGGING__BASE_LOG_FOLDER", str(af / "logs"))
    stamp = af / ".migrated"
    if not stamp.exists():
        print("  migrating the Airflow metadata DB (SQLite, once)...", flush=True)
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
        stamp.write_text("ok")
    return af


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def seed_aws(endpoint: str, periods: list[str], rows_per_month: int) -> dict[str, str]:
    """Write CUR 2.0 exports (with manifests) for each period into moto S3 at the place the
    example config's `main-payer` source reads. Returns expected unblended totals per period."""
    import boto3

    from finops.config import get_config
    from finops.demo import cur_generator as gen

    os.environ["AIRFLOW_CONN_AWS_DEFAULT"] = json.dumps(
        {"conn_type": "aws", "login": "demo", "password": "demo",
         "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    )
    src = get_config().sources.aws[0]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="demo", aws_secret_access_key="demo")
    s3.create_bucket(Bucket=src.bucket)
    expected: dict[str, str] = {}
    work = finops_home() / "demo-exports" / "aws"
    for i, period in enumerate(periods):
        spec = gen.GenSpec(period=period, rows=rows_per_month, seed=100 + i)
        delivery = gen.write_and_upload_cur2(s3, src.bucket, src.prefix, spec, work / period)
        expected[period] = f"{delivery.totals.billed_total:.2f}"
    return expected


def run_dag(dag_id: str, conf: dict, log_file: Path) -> str:
    """Run one DAG through Airflow's own `dag.test()` (real task runner, SQLite metadata) in a
    subprocess whose output goes to `log_file`. Returns the final state."""
    with log_file.open("a") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "finops.demo.dagtest", dag_id, json.dumps(conf)],
            stdout=fh, stderr=subprocess.STDOUT, env=os.environ.copy(), check=False,
        )
    text = log_file.read_text()
    marker = f"FINOPS_DAGTEST {dag_id} state="
    if marker in text:
        return text.rsplit(marker, 1)[1].split()[0]
    return f"failed (exit {proc.returncode}; see {log_file})"


def summary(periods: list[str]) -> str:
    from finops.warehouse import connect

    wh = connect()
    try:
        lines = ["", "Cost summary (BilledCost / EffectiveCost, from the FOCUS warehouse)"]
        rows = wh.query(
            "SELECT x_billing_period, x_provider, billing_currency, count(*), sum(billed_cost), sum(effective_cost) "
            "FROM focus_costs GROUP BY ALL ORDER BY 1, 2"
        )
        lines.append(f"  {'period':8} {'provider':8} {'cur':4} {'rows':>9} {'billed':>14} {'effective':>14}")
        for p, prov, cur, n, b, e in rows:
            lines.append(f"  {p:8} {prov:8} {cur:4} {n:>9,} {b:>14,.2f} {e:>14,.2f}")
        lines.append("")
        lines.append("  Last period by service category:")
        last = periods[-1]
        for cat, b in wh.query(
            "SELECT service_category, sum(billed_cost) FROM focus_costs WHERE x_billing_period = ? "
            "GROUP BY 1 ORDER BY 2 DESC", [last]
        ):
            lines.append(f"    {cat:28} {b:>14,.2f}")
        gpu = wh.query(
            "SELECT coalesce(pricing_category, 'n/a'), sum(effective_cost) FROM focus_costs "
            "WHERE x_billing_period = ? AND regexp_matches(coalesce(x_instance_type, ''), '^(p4d|p5|g5|g6)') "
            "GROUP BY 1 ORDER BY 2 DESC", [last]
        )
        if gpu:
            lines.append("  GPU instances (p4d/p5/g5/g6) by pricing category, effective cost:")
            for cat, e in gpu:
                lines.append(f"    {cat:28} {e:>14,.2f}")
        loads = wh.query(
            "SELECT source, billing_period, status, row_count, focus_billed_total, raw_billed_total FROM load_log "
            "ORDER BY finished_at DESC LIMIT 8"
        )
        lines.append("  Latest loads (load_log): source period status rows focus_total raw_total")
        for s, p, st, n, ft, rt in loads:
            lines.append(f"    {s:12} {p} {st:11} {n or 0:>8,} {ft or 0:>14,.2f} {rt or 0:>14,.2f}")
        return "\n".join(lines)
    finally:
        wh.close()


def run_demo(months: int = 3, rows_per_month: int = 20_000,
             extra_seeders: list[Callable[[list[str]], None]] | None = None) -> int:
    home = finops_home()
    print(f"airflow-finops demo — FINOPS_HOME={home}", flush=True)
    prepare_airflow_env(home)
    periods = demo_periods(months)
    log_file = home / "demo.log"
    log_file.write_text("")
    with moto_server() as endpoint:
        print(f"  moto S3 on {endpoint}; writing CUR 2.0 exports for {', '.join(periods)} "
              f"({rows_per_month:,} rows/month)...", flush=True)
        expected = seed_aws(endpoint, periods, rows_per_month)
        for seeder in extra_seeders or []:
            seeder(periods)
        print("  running finops_billing_aws through Airflow (dag.test, SQLite metadata)...", flush=True)
        state = run_dag("finops_billing_aws", {"billing_period": ",".join(periods)}, log_file)
    print(f"  finops_billing_aws: {state}")
    print(summary(periods))
    print("\n  Expected unblended totals from the generator:", ", ".join(f"{p}: {t}" for p, t in expected.items()))
    print(f"""
Where to look:
  warehouse (DuckDB):   {home / 'warehouse.duckdb'}   e.g. duckdb {home / 'warehouse.duckdb'} "FROM focus_costs LIMIT 5"
  Airflow task logs:    {home / 'airflow' / 'logs'}   (run output: {log_file})
  quarantine:           {home / 'quarantine'}
  FOCUS export:         .venv/bin/finops export focus --period {periods[-1]} --out {home / 'focus.parquet'}
""")
    return 0 if state == "success" else 1
