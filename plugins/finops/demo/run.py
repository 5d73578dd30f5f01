"""`finops demo` (behind `make demo`): the whole product on local emulators, stage by stage,
each printed as it ends and failing the command when it falls short:

  1. billing: realistic exports -> local cloud emulators -> the real billing DAGs through
     Airflow (SQLite metadata DB) -> DuckDB warehouse -> totals checked to the cent;
  2-6. showback, anomaly alerts, policies (dry run), prices, the CPU benchmark
     (finops.demo.stages);
  7. how to look at it: `make ui` (finops.demo.ui).

Nothing here reaches the internet. Every provider is served by a local emulator
(finops.demo.emulators) and read by its real source code through Airflow connections:
AWS CUR 2.0 in a moto S3 server, the GCP detailed export in bqemulator (BigQuery REST API),
Azure Cost Management exports (folders, runs, manifests) in Azurite, and Lambda Cloud
instance lifetimes polled from a local API speaking the real /api/v1 shapes.

Lambda Cloud has no billing export, only "what is running now". For the closed demo months
the demo replays the polls a running deployment would have made (every 30 minutes, with a
3-hour outage) through the source's own poller (`poll_once`, real HTTP, real lifetime rule,
into the warehouse); `finops_billing_lambda` then polls the API itself and derives the
hourly FOCUS rows from the recorded lifetimes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from finops.demo.cur_generator import TEAMS, Spike
from finops.demo.stages import StageResult
from finops.demo.ui import DEMO_UI_PASSWORD, DEMO_UI_USER
from finops.paths import REPO_ROOT, finops_home
from finops.periods import period_of, shift

log = logging.getLogger(__name__)
PROVIDERS = ("aws", "gcp", "azure", "lambda")
GCP_DAYS = 2  # small non-AWS samples keep `make demo` short
AZURE_DAYS = 3
# The last month's anomaly: team ml-prod's on-demand p5.48xlarge hours of the month all land on
# its last day (a training fleet left running), about $9k on a $9k day at the default size.
DEMO_SPIKE = Spike(kind="p5_od", account=None, share=1.0, day=-1, team=TEAMS.index("ml-prod"))


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


def seed_aws(endpoint: str, periods: list[str], rows_per_month: int) -> dict[str, Decimal]:
    """Write CUR 2.0 exports (with manifests) for each period into moto S3 at the place the
    example config's `main-payer` source reads. Returns expected BilledCost per period."""
    import boto3

    from finops.config import get_config
    from finops.demo import cur_generator as gen

    os.environ["AIRFLOW_CONN_AWS_DEFAULT"] = json.dumps(
        {
            "conn_type": "aws",
            "login": "demo",
            "password": "demo",
            "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        }
    )
    src = get_config().sources.aws[0]
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )
    s3.create_bucket(Bucket=src.bucket)
    expected: dict[str, Decimal] = {}
    work = finops_home() / "demo-exports" / "aws"
    ri_end = gen.GenSpec(periods[-1]).end + timedelta(days=31)  # one RI end date in every delivery:
    for i, period in enumerate(periods):  # inside the 30-day warning window all this month
        spike = DEMO_SPIKE if i == len(periods) - 1 else None  # the anomaly stage's spike
        spec = gen.GenSpec(period=period, rows=rows_per_month, seed=100 + i, spike=spike, ri_end=ri_end)
        delivery = gen.write_and_upload_cur2(s3, src.bucket, src.prefix, spec, work / period)
        expected[period] = delivery.totals.billed_total
    return expected


def _bq_schema(fields: list[dict[str, Any]]) -> list[Any]:
    from google.cloud import bigquery

    return [
        bigquery.SchemaField(
            f["name"], f["type"], mode=f.get("mode", "NULLABLE"), fields=_bq_schema(f.get("fields", []))
        )
        for f in fields
    ]


def seed_gcp(endpoint: str, periods: list[str], days: int = GCP_DAYS) -> dict[str, Decimal]:
    """Create the configured detailed-export table (real nested schema) in the BigQuery
    emulator and stream `days` days of each period into it. Returns expected BilledCost."""
    from google.cloud import bigquery

    from finops.config import get_config
    from finops.demo import gcp_generator as gen
    from finops.demo.emulators import bigquery_client

    src = get_config().sources.gcp[0]
    client = bigquery_client(endpoint, src.project)
    client.create_dataset(f"{src.project}.{src.dataset}", exists_ok=True)
    table = client.create_table(
        bigquery.Table(f"{src.project}.{src.dataset}.{src.table}", schema=_bq_schema(gen.BQ_SCHEMA)),
        exists_ok=True,
    )
    expected: dict[str, Decimal] = {}
    for i, period in enumerate(periods):
        sample = gen.generate(period=period, days=days, seed=7 + i)
        errors = client.insert_rows_json(table, sample.json_rows())
        if errors:
            raise RuntimeError(f"bqemulator refused GCP demo rows for {period}: {errors[:3]}")
        expected[period] = sample.billed_total
    return expected


def seed_azure(connection_string: str, periods: list[str], days: int = AZURE_DAYS) -> dict[str, Decimal]:
    """Cost Management exports into Azurite, laid out as Azure writes them:
    <container>/<root>/<YYYYMMDD-YYYYMMDD>/<runId>/{manifest.json, part_0_0001.csv.gz}. Each month
    gets two month-to-date runs; only the newer (complete) one must count."""
    import uuid

    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    from finops.config import get_config
    from finops.demo import azure_generator as gen
    from finops.periods import period_bounds

    src = get_config().sources.azure[0]
    svc = BlobServiceClient.from_connection_string(connection_string)
    with contextlib.suppress(ResourceExistsError):
        svc.create_container(src.container)
    container = svc.get_container_client(src.container)
    export_name = src.prefix.rstrip("/").rsplit("/", 1)[-1]
    layout = "mca" if src.agreement == "mca" else "ea"
    export_type = {"actual": "ActualCost", "amortized": "AmortizedCost", "focus": "FocusCost"}[src.format]
    expected: dict[str, Decimal] = {}
    for i, period in enumerate(periods):
        start, end = period_bounds(period)
        last = end - timedelta(days=1)
        folder = f"{src.prefix.strip('/')}/{start:%Y%m%d}-{last:%Y%m%d}"
        sample = None
        for n_days in (days - 1, days):  # an earlier month-to-date run, then the newer one
            sample = gen.generate(period=period, layout=layout, kind=src.format, days=n_days, seed=11 + i)
            run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{src.name}/{period}/{n_days}"))
            blob = f"{folder}/{run_id}/part_0_0001.csv.gz"
            body = sample.csv_bytes(gz=True)
            container.upload_blob(blob, body, overwrite=True)
            submitted = (start + timedelta(days=n_days, hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
            manifest = gen.manifest(
                export_name=export_name,
                run_id=run_id,
                submitted=submitted,
                blobs=[(blob, len(body), len(sample.rows))],
                export_type=export_type,
                start=f"{start:%Y-%m-%d}",
                end=f"{last:%Y-%m-%d}",
            )
            container.upload_blob(
                f"{folder}/{run_id}/manifest.json", json.dumps(manifest).encode(), overwrite=True
            )
        assert sample is not None
        expected[period] = sample.billed_total
    return expected


def lambda_sample(period: str) -> Any:
    """The generator's month (3 GPU instances, polls every 30 min for 16 h with a 3-hour outage),
    with instance ids unique per month and the notebook shut down before the last poll."""
    from finops.demo import lambda_generator as gen

    base = gen.generate(period)
    t0 = base.polls[0]
    insts = [
        replace(
            i,
            iid=hashlib.md5(f"{i.iid}:{period}".encode()).hexdigest(),
            terminated=i.terminated or t0 + timedelta(hours=15, minutes=40),
        )
        for i in base.instances
    ]
    return gen.LambdaSample(period, insts, list(base.polls))


def lambda_expected(sample: Any) -> Decimal:
    """Expected cost from the true lifetimes as the polls see them, worked out independently of
    the source: billed from the first poll that finds an instance running to the first poll that
    no longer does, but at most one poll interval (1 h) past the last sighting."""
    from finops.demo import lambda_generator as gen

    cap = timedelta(hours=1)
    intervals = []
    for i in sample.instances:
        seen = [t for t in sample.polls if i.booted <= t and (i.terminated is None or t < i.terminated)]
        if not seen:
            continue
        later = [t for t in sample.polls if t > seen[-1]]
        end = min(later[0], seen[-1] + cap) if later else seen[-1]
        intervals.append((seen[0], end, gen.INSTANCE_TYPES[i.itype]["price_cents_per_hour"]))
    return gen.expected_total(intervals)


def seed_lambda(state: Any, periods: list[str]) -> dict[str, Decimal]:
    """Replay each closed month's polls through the Lambda source's own poller (real HTTP to
    the local API, lifetime rule, warehouse). `state` is the fake API's LambdaApiState. Leaves
    one instance running "now" for the DAG's own poll to find. Returns expected BilledCost."""
    from finops.config import get_config
    from finops.demo import lambda_generator as gen
    from finops.sources import lambda_cloud as lam
    from finops.warehouse import connect

    src = get_config().sources.lambda_cloud[0]
    client = lam.LambdaApi(src.conn_id)
    wh = connect()
    expected: dict[str, Decimal] = {}
    try:
        for period in periods:
            sample = lambda_sample(period)
            for t in sample.polls:
                state.instances = sample.response_at(t)["data"]
                lam.poll_once(wh, src, client, polled_at=t)
            expected[period] = lambda_expected(sample)
    finally:
        wh.close()
    state.instances = [
        gen.instance_json("5d1c0ffee0a94e4c9d2b7a1e3f4a5b6c", "dev-box", "gpu_1x_a10", "us-west-1", "active")
    ]
    return expected


class DagRunner:
    """One `finops.demo.dagtest --serve` process for every DAG of a demo run, its output in
    `log_file`: the first dag.test() of a process pays for Airflow's in-process execution API,
    later ones reuse it (finops.demo.dagtest). A run whose server died starts a fresh one."""

    def __init__(self, log_file: Path) -> None:
        self.log_file = log_file
        self.proc: subprocess.Popen[str] | None = None
        self.results: Any = None
        self.log: Any = None

    def _start(self) -> None:
        self.close()
        r, w = os.pipe()
        self.log = self.log_file.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "finops.demo.dagtest", "--serve", str(w)],
            stdin=subprocess.PIPE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
            pass_fds=(w,),
            text=True,
        )
        os.close(w)
        self.results = os.fdopen(r, "r")

    def run(self, dag_id: str, conf: dict) -> str:
        """The final state of one run, without retries (the demo fails fast)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        request = {"dag_id": dag_id, "conf": conf, "env": dict(os.environ), "no_retries": True}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.results.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            rc = self.proc.wait()
            self.close()
            return f"failed (exit {rc}; see {self.log_file})"
        return str(json.loads(line)["state"])

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        for f in (self.results, self.log):
            if f is not None:
                f.close()
        self.results = self.log = None


_RUNNERS: dict[Path, DagRunner] = {}


def run_dag(dag_id: str, conf: dict, log_file: Path) -> str:
    """Run one DAG through Airflow's own `dag.test()` (real task runner, SQLite metadata) in the
    demo's dag.test server, whose output goes to `log_file`, without retries. Returns the final
    state."""
    runner = _RUNNERS.get(log_file)
    if runner is None:
        runner = _RUNNERS[log_file] = DagRunner(log_file)
    return runner.run(dag_id, conf)


def close_dag_runners() -> None:
    while _RUNNERS:
        _RUNNERS.popitem()[1].close()


def summary(
    periods: list[str], expected: dict[str, dict[str, Decimal]] | None = None
) -> tuple[str, list[str]]:
    """The printed cost summary, and the (period, provider) totals that do not match the
    generators' expected totals to the cent or are missing: the demo fails on any."""
    from finops.warehouse import connect

    expected = expected or {}
    problems: list[str] = []
    wh = connect()
    try:
        lines = ["", "Cost summary (BilledCost / EffectiveCost, from the FOCUS warehouse)"]
        rows = wh.query(
            "SELECT x_billing_period, x_provider, billing_currency, count(*), sum(billed_cost), sum(effective_cost) "
            "FROM focus_costs GROUP BY 1, 2, 3 ORDER BY 1, 2"
        )
        lines.append(
            f"  {'period':8} {'provider':8} {'cur':4} {'rows':>9} {'billed':>14} {'effective':>14}"
            f" {'expected':>14}"
        )
        got: dict[tuple[str, str], Decimal] = {}
        for p, prov, cur, n, b, e in rows:
            got[(p, prov)] = Decimal(b)
            exp = expected.get(prov, {}).get(p)
            verdict = None if exp is None else _check(Decimal(b), exp)
            mark = "" if exp is None else f" {exp:>14,.2f} {verdict}"
            if verdict not in (None, "ok"):
                problems.append(f"{p} {prov}: billed {b} != expected {exp}")
            lines.append(f"  {p:8} {prov:8} {cur:4} {n:>9,} {b:>14,.2f} {e:>14,.2f}{mark}")
        for prov, per in expected.items():  # expected but nothing loaded
            for p, exp in per.items():
                if (p, prov) not in got:
                    lines.append(f"  {p:8} {prov:8} {'':4} {0:>9,} {'-':>14} {'-':>14} {exp:>14,.2f} MISSING")
                    problems.append(f"{p} {prov}: nothing loaded (expected {exp})")
        lines.append("")
        lines.append("  Cost by provider, all periods (billed vs the generators' expected totals):")
        for prov, cur, n, b, e in wh.query(
            "SELECT x_provider, billing_currency, count(*), sum(billed_cost), sum(effective_cost) "
            "FROM focus_costs GROUP BY 1, 2 ORDER BY 4 DESC"
        ):
            exp_all = sum(expected.get(prov, {}).values(), Decimal(0)) if prov in expected else None
            mark = "" if exp_all is None else f" {exp_all:>14,.2f} {_check(Decimal(b), exp_all)}"
            lines.append(f"    {prov:8} {cur:4} {n:>9,} {b:>14,.2f} {e:>14,.2f}{mark}")
        lines.append("")
        lines.append("  Last period by service category:")
        last = periods[-1]
        for cat, b in wh.query(
            "SELECT service_category, sum(billed_cost) FROM focus_costs WHERE x_billing_period = ? "
            "GROUP BY 1 ORDER BY 2 DESC",
            [last],
        ):
            lines.append(f"    {cat:28} {b:>14,.2f}")
        # the configured warehouse may be PostgreSQL: portable GROUP BY, its own regex operator
        itype = "coalesce(x_instance_type, '')"
        match = f"regexp_matches({itype}, ?)" if wh.dialect == "duckdb" else f"{itype} ~ ?"
        gpu = wh.query(
            "SELECT x_provider, coalesce(pricing_category, 'n/a'), sum(effective_cost) FROM focus_costs "
            f"WHERE x_billing_period = ? AND {match} "
            "GROUP BY 1, 2 ORDER BY 3 DESC",
            [last, GPU_INSTANCE_PATTERN],
        )
        if gpu:
            lines.append("  GPU instances by provider and pricing category, effective cost:")
            for prov, cat, e in gpu:
                lines.append(f"    {prov:8} {cat:19} {e:>14,.2f}")
        loads = wh.query(
            "SELECT source, billing_period, status, row_count, focus_billed_total, raw_billed_total FROM load_log "
            "ORDER BY finished_at DESC LIMIT ?",
            [len(PROVIDERS) * len(periods)],
        )
        lines.append("  Latest loads (load_log): source period status rows focus_total raw_total")
        for s, p, st, n, ft, rt in loads:
            lines.append(f"    {s:12} {p} {st:11} {n or 0:>8,} {ft or 0:>14,.2f} {rt or 0:>14,.2f}")
        return "\n".join(lines), problems
    finally:
        wh.close()


# AWS p4d/p5/g5/g6, GCP a2/a3/g2 machine types, Azure NC/ND/NV sizes, every Lambda gpu_* type.
GPU_INSTANCE_PATTERN = r"^(p4d|p5|g5|g6|a2-|a3-|g2-|Standard_N[CDV]|gpu_)"


def _check(got: Decimal, expected: Decimal) -> str:
    """To the cent, as the issue asks."""
    cent = Decimal("0.01")
    return "ok" if got.quantize(cent) == expected.quantize(cent) else "MISMATCH"


# Loud at INFO in this process (emulators on threads, SDK request dumps, the Lambda replay);
# the DAG runs' own logs go to demo.log and the Airflow task logs.
NOISY_LOGGERS = (
    "azure",
    "bqemulator",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "sqlglot",
    "botocore",
    "werkzeug",
    "finops",
    "httpx",
    "mail.log",
)


def quiet_logging() -> None:
    """Keep the terminal to the demo's own progress lines and summary."""
    import warnings

    logging.getLogger("airflow").setLevel(logging.WARNING)  # "Reading the config ..." on import
    import airflow.sdk  # noqa: F401 - Airflow configures logging on import: do it before muting
    import structlog

    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # Airflow's own filtering logger at WARNING, not structlog.make_filtering_bound_logger():
    # hooks' `.log` is a structlog logger, and Airflow's class keeps the stdlib attributes
    # (`.level`, `.handlers`) that client libraries read (slack_sdk reads `logger.level`).
    from airflow.sdk._shared.logging.structlog import LEVEL_TO_FILTERING_LOGGER

    structlog.configure(wrapper_class=LEVEL_TO_FILTERING_LOGGER[logging.WARNING])
    warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)


def load_billing(
    res: StageResult,
    stack: contextlib.ExitStack,
    endpoint: str,
    periods: list[str],
    rows_per_month: int,
    providers: tuple[str, ...],
    log_file: Path,
    extra_seeders: list[Callable[[list[str]], None]] | None = None,
) -> None:
    """Stage 1: seed every configured provider's emulator, run its billing DAG, and judge the
    warehouse against the generators' totals to the cent."""
    from finops.config import get_config
    from finops.demo import emulators

    srcs = get_config().sources
    expected: dict[str, dict[str, Decimal]] = {}
    if "aws" in providers:
        print(
            f"  moto S3 on {endpoint}; writing CUR 2.0 exports for {', '.join(periods)} "
            f"({rows_per_month:,} rows/month)...",
            flush=True,
        )
        expected["aws"] = seed_aws(endpoint, periods, rows_per_month)
    if srcs.gcp and "gcp" in providers:
        bq = stack.enter_context(emulators.bigquery_emulator(srcs.gcp[0].conn_id, srcs.gcp[0].project))
        print(f"  bqemulator on {bq}; GCP detailed export, {GCP_DAYS} days/month...", flush=True)
        expected["gcp"] = seed_gcp(bq, periods)
    if srcs.azure and "azure" in providers:
        conn_str = stack.enter_context(emulators.azurite(srcs.azure[0].conn_id))
        blob_url = conn_str.split("BlobEndpoint=", 1)[1].rstrip(";")
        print(
            f"  Azurite on {blob_url}; Azure amortized exports, {AZURE_DAYS} days/month, 2 runs each...",
            flush=True,
        )
        expected["azure"] = seed_azure(conn_str, periods)
    # the Lambda API also serves the price stage's Lambda price list: always started
    conn_id = srcs.lambda_cloud[0].conn_id if srcs.lambda_cloud else "lambda_cloud_default"
    api = stack.enter_context(emulators.lambda_api(conn_id))
    if srcs.lambda_cloud and "lambda" in providers:
        print(f"  Lambda Cloud API on {api.url}; replaying 30-minute polls of each month...", flush=True)
        expected["lambda"] = seed_lambda(api.state, periods)
    for seeder in extra_seeders or []:
        seeder(periods)
    for provider in PROVIDERS:
        if provider not in expected:
            continue
        dag_id = f"finops_billing_{provider}"
        print(f"  running {dag_id} through Airflow (dag.test, SQLite metadata)...", flush=True)
        state = run_dag(dag_id, {"billing_period": ",".join(periods)}, log_file)
        print(f"  {dag_id}: {state}", flush=True)
        res.need(state == "success", f"{dag_id} ended {state}")
    res.need(bool(expected), "no provider to load")
    text, problems = summary(periods, expected)
    res.lines += text.splitlines()[1:]
    res.problems += problems


def _print_stage(n: int, res: StageResult) -> None:
    for line in res.lines:
        print(line)
    for f in res.files:
        print(f"  wrote {f}")
    verdict = "ok" if not res.problems else "FAILED"
    print(f"  -> {verdict} ({res.seconds:.0f} s)", flush=True)
    for problem in res.problems:
        print(f"  FAILED: {problem}", flush=True)


def run_demo(
    months: int = 3,
    rows_per_month: int = 20_000,
    extra_seeders: list[Callable[[list[str]], None]] | None = None,
    providers: tuple[str, ...] = PROVIDERS,
) -> int:
    """Every stage in order, each printed as it ends; exit 1 when any stage fell short."""
    from finops.demo import stages
    from finops.demo.alert_sinks import slack_webhook, smtp_server
    from finops.demo.aws_price_apis import aws_price_apis
    from finops.demo.config import AWS_PRICES_CONN, GCP_PRICES_CONN, SLACK_CONN, SMTP_CONN, write_demo_config
    from finops.demo.price_apis import price_apis

    t0 = time.perf_counter()
    home = finops_home()
    print(f"airflow-finops demo — FINOPS_HOME={home}", flush=True)
    prepare_airflow_env(home)
    quiet_logging()
    periods = demo_periods(months)
    log_file = home / "demo.log"
    log_file.write_text("")
    out = home / "demo"
    done: list[StageResult] = []

    def dag(dag_id: str, conf: dict[str, Any]) -> str:
        return run_dag(dag_id, conf, log_file)

    def stage(n: int, title: str, run: Callable[[], StageResult]) -> None:
        print(f"\n== {n}. {title} ==", flush=True)
        res = run()
        done.append(res)
        _print_stage(n, res)

    with contextlib.ExitStack() as stack:
        stack.callback(close_dag_runners)
        slack = stack.enter_context(slack_webhook(SLACK_CONN))
        inbox = stack.enter_context(smtp_server(SMTP_CONN))
        apis = stack.enter_context(price_apis(GCP_PRICES_CONN))
        endpoint = stack.enter_context(moto_server())
        stack.enter_context(aws_price_apis(endpoint, AWS_PRICES_CONN))
        config = write_demo_config(home, apis.azure_url)
        print(
            f"  config: {config} (alerts -> local Slack {slack.url} and SMTP 127.0.0.1:{inbox.port})",
            flush=True,
        )
        stage(
            1,
            "Billing of the four clouds",
            lambda: stages.timed(
                "Billing",
                lambda res: load_billing(
                    res, stack, endpoint, periods, rows_per_month, providers, log_file, extra_seeders
                ),
            ),
        )
        stage(2, "Showback / chargeback", lambda: stages.showback(periods, dag))
        stage(3, "Anomaly detection and alerts", lambda: stages.anomalies(dag, slack, inbox, out / "alerts"))
        stage(
            4, "Tagging and idle-GPU policies, dry run", lambda: stages.policies(endpoint, dag, periods[-1])
        )
        stage(5, "Price history from local fakes of the price APIs", lambda: stages.prices(dag))
        stage(
            6,
            "Commitments: coverage, utilisation, expiry, purchase advice",
            lambda: stages.commitments(dag, slack),
        )
        stage(
            7, "Training job: spot, a preemption, a fallback to on-demand", lambda: stages.training_job(dag)
        )
    stage(8, "GPU benchmark on this CPU, priced against the loaded prices", lambda: stages.benchmark(out))
    total = time.perf_counter() - t0
    print(f"""
== 9. How to look at it ==
  The FinOps view on this warehouse, inside the Airflow UI:  make ui
    (starts `airflow api-server` on http://127.0.0.1:8080 with FINOPS_HOME={home};
     log in as {DEMO_UI_USER} / {DEMO_UI_PASSWORD}, then Browse -> FinOps, or open /finops/ directly)
  warehouse (DuckDB):   {home / "warehouse.duckdb"}   query it: .venv/bin/python -c "import duckdb; print(duckdb.connect('{home / "warehouse.duckdb"}', read_only=True).sql('FROM focus_costs LIMIT 5'))"
  Airflow task logs:    {home / "airflow" / "logs"}   (run output: {log_file})
  alerts caught:        {out / "alerts"}   reports: {home / "reports"}   quarantine: {home / "quarantine"}
  FOCUS export:         FINOPS_HOME={shlex.quote(str(home))} .venv/bin/finops export focus --period {periods[-1]} --out {shlex.quote(str(home / "focus.parquet"))}

Stage times: {", ".join(f"{i}. {r.seconds:.0f} s" for i, r in enumerate(done, 1))}; total {total:.0f} s
""")
    failed = [(i, r) for i, r in enumerate(done, 1) if r.problems]
    for i, r in failed:
        for problem in r.problems:
            print(f"demo FAILED in stage {i} ({r.title}): {problem}", flush=True)
    return 1 if failed else 0
