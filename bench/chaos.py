"""Fault injection: kill, throttle, fill and corrupt the real load / policy code, then run it again
as an Airflow retry would, and check what survived.

    python bench/chaos.py [--rounds N] [--rows N] [--seed S] [--only KIND,...]

Faults (each round picks its moment at random):
- kill_load_duckdb / kill_load_postgres: SIGKILL a real subprocess running `ingest.load_batch` of
  a restated CUR 2.0 month over the loaded one (DuckDB file; PostgreSQL at 127.0.0.1:5432 `test`,
  a throw-away schema), at a random point of the load; then the load again.
- kill_policy: SIGKILL a real subprocess running `run_policy` (live) over an idle GPU fleet on a
  moto server; then the policy again, with the same run id (an Airflow retry).
- cloud_errors: the policy run through a fault proxy in front of moto that answers 500 / 503,
  429 with Retry-After, holds a request past the client's read timeout, or resets the
  connection; then the policy again.
- disk_full: FINOPS_HOME on a tmpfs too small for the load (mount -t tmpfs -o size=...: needs
  root; without it the kind is reported as not run); the load fails with ENOSPC, then the
  file system is remounted larger and the load runs again.
- torn_wal: a load is killed after its commit reached DuckDB's write-ahead log, and the log's
  last write is torn (cut mid-record, garbage appended); then the warehouse is opened again.

After each: the partition holds the old delivery or the new one, never a mix; the totals equal
the generator's invoice to the cent; every cloud call has one audit row with a truthful
outcome (audit.outcome_of); every instance the policy must stop is stopped after the retry and
none other; the next run needed no human. Prints the figures per kind; exits 1 if anything
was lost."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

PERIOD = "2026-03"
SOURCE = "chaos"
PG_DSN = os.environ.get("FINOPS_TEST_PG_DSN", "host=127.0.0.1 port=5432 user=postgres dbname=test")
CENT = Decimal("0.01")
KINDS = (
    "kill_load_duckdb",
    "kill_load_postgres",
    "kill_policy",
    "cloud_errors",
    "kill_bench",
    "kill_reaper",
    "disk_full",
    "pg_disk_full",
    "torn_wal",
    "cut_file",
)


@dataclass
class Tally:
    injected: Counter = field(default_factory=Counter)
    survived: Counter = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    notes: Counter = field(default_factory=Counter)  # how each fault landed (before / during / after)

    def record(self, kind: str, problems: list[str], landed: str = "") -> None:
        self.injected[kind] += 1
        if landed:
            self.notes[f"{kind}: {landed}"] += 1
        if problems:
            self.lost += [f"{kind}: {p}" for p in problems]
        else:
            self.survived[kind] += 1


# ---------------------------------------------------------------- billing deliveries --------
@dataclass(frozen=True)
class Delivery:
    path: Path
    fingerprint: str
    rows: int
    billed: Decimal  # the invoice total (generator's exact figure)


def make_deliveries(root: Path, rows: int, seed: int) -> tuple[Delivery, Delivery]:
    """A month as first delivered and as restated (other numbers, same period)."""
    from finops.demo.cur_generator import GenSpec, write_cur2_period

    out = []
    for restatement in (0, 1):
        spec = GenSpec(period=PERIOD, rows=rows, seed=seed, restatement=restatement)
        d = write_cur2_period(root / f"v{restatement}", spec)
        files = sorted((root / f"v{restatement}").rglob("*.parquet"))
        out.append(Delivery(files[0], spec.execution_id, d.totals.rows, d.totals.billed_total))
    return out[0], out[1]


def open_wh(backend: str, home: Path, schema: str | None = None):  # type: ignore[no-untyped-def]
    if backend == "duckdb":
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        wh = DuckDBWarehouse(home / "warehouse.duckdb")
    else:
        from finops.warehouse.postgres_wh import PostgresWarehouse

        wh = PostgresWarehouse.from_dsn(PG_DSN, schema=schema or "chaos")
    wh.migrate()
    return wh


def load(backend: str, home: Path, d: Delivery, schema: str | None = None, hold: bool = False) -> str:
    """One load through the spine. `hold`: report DONE and never close (a process killed after
    its commit, before DuckDB's checkpoint-on-close folds the WAL into the file)."""
    from finops.focus.aws_cur_mapping import Cur2Converter
    from finops.ingest import RawBatch, load_batch

    wh = open_wh(backend, home, schema)
    try:
        entry = load_batch(wh, RawBatch(SOURCE, "aws", PERIOD, [d.path], d.fingerprint), Cur2Converter())
        if hold:
            print("DONE", entry.status, flush=True)
            time.sleep(3600)
        return str(entry.status)
    finally:
        wh.close()


def partition(backend: str, home: Path, schema: str | None = None) -> tuple[int, Decimal]:
    wh = open_wh(backend, home, schema)
    try:
        n, total = wh.query(
            "SELECT count(*), coalesce(sum(billed_cost), 0) FROM focus_costs "
            "WHERE x_source = ? AND x_billing_period = ?",
            [SOURCE, PERIOD],
        )[0]
        return int(n), Decimal(str(total))
    finally:
        wh.close()


def check_partition(got: tuple[int, Decimal], allowed: list[Delivery], what: str) -> list[str]:
    """The partition is one whole delivery (rows and invoice total to the cent), never a mix."""
    n, total = got
    for d in allowed:
        if total.quantize(CENT) == d.billed.quantize(CENT) and n > 0:
            return []
    return [f"{what}: partition holds {n} rows / {total} -- none of {[str(d.billed) for d in allowed]}"]


# ---------------------------------------------------------------- subprocess workers --------
def spawn(kind: str, args: dict[str, Any], env: dict[str, str]) -> subprocess.Popen:
    """A real task process: imports, prints READY, does the work, prints DONE."""
    return subprocess.Popen(
        [sys.executable, __file__, "_worker", kind, json.dumps(args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def wait_ready(p: subprocess.Popen, until: str = "READY") -> None:
    """Skip the worker's log lines (structlog writes to stdout) up to its READY (or DONE)."""
    while p.stdout:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"worker ended before {until} (rc {p.poll()})")
        if line.strip().startswith(until):
            threading.Thread(target=p.stdout.read, daemon=True).start()  # keep draining: never block it
            return


def kill_at(p: subprocess.Popen, delay: float) -> str:
    """SIGKILL after `delay` s of work; 'finished' if the work ended first."""
    end = time.monotonic() + delay
    while time.monotonic() < end:
        if p.poll() is not None:
            return "finished"
        time.sleep(0.005)
    if p.poll() is not None:
        return "finished"
    p.send_signal(signal.SIGKILL)
    p.wait()
    return "killed"


def _worker(kind: str, args: dict[str, Any]) -> None:
    if kind == "load":
        from finops.focus.aws_cur_mapping import Cur2Converter  # noqa: F401 - imported before READY
        from finops.ingest import load_batch  # noqa: F401

        print("READY", flush=True)
        d = Delivery(Path(args["path"]), args["fingerprint"], 0, Decimal(0))
        print(
            "DONE",
            load(args["backend"], Path(args["home"]), d, args.get("schema"), bool(args.get("hold"))),
            flush=True,
        )
    elif kind == "bench":
        from finops.gpubench import lifecycle

        settings, launcher, wh, presign, payloads = _bench_parts(args)
        print("READY", flush=True)
        try:
            for k, prepared in enumerate(args["prepared"]):
                lifecycle.launch(
                    prepared, settings, launcher, dry_run=False, wh=wh, presign=presign, payloads=payloads
                )
                print(f"LAUNCHED {k}", flush=True)
                lifecycle.terminate(prepared, launcher, dry_run=False, wh=wh, poll_s=0.01, sleep=time.sleep)
                print(f"TORNDOWN {k}", flush=True)
        finally:
            wh.close()
        print("DONE", flush=True)
    elif kind == "reaper":
        from finops.gpubench import lifecycle

        _, launcher, wh, _, _ = _bench_parts(args)
        print("READY", flush=True)
        try:
            lifecycle.reap([launcher], dry_run=False, wh=wh, run_id=args["run_id"], cap=args["cap"])
        finally:
            wh.close()
        print("DONE", flush=True)
    elif kind == "policy":
        from finops.policies.engine import run_policy

        cloud, policy, wh = _policy_parts(args)
        print("READY", flush=True)
        try:
            run_policy(policy, cloud, wh, dry_run=False, run_id=args["run_id"])
        finally:
            wh.close()
        print("DONE", flush=True)


# ---------------------------------------------------------------- billing kinds --------------
def seed_old(backend: str, home: Path, old: Delivery, schema: str | None, base: Path | None) -> None:
    """The month as first delivered: a copy of a warehouse that holds it (DuckDB), else a load."""
    if base is not None and backend == "duckdb":
        shutil.copy(base, home / "warehouse.duckdb")
    else:
        load(backend, home, old, schema)


def billing_round(
    tally: Tally,
    kind: str,
    backend: str,
    work: Path,
    old: Delivery,
    new: Delivery,
    rng: random.Random,
    duration: float,
    base: Path | None = None,
    rerun: bool = True,
) -> None:
    home = work / f"{kind}-{tally.injected[kind]}"
    home.mkdir(parents=True)
    schema = f"chaos_{os.getpid()}_{tally.injected[kind]}" if backend == "postgres" else None
    env = {**os.environ, "FINOPS_HOME": str(home)}
    problems: list[str] = []
    try:
        seed_old(backend, home, old, schema, base)
        p = spawn(
            "load",
            {
                "backend": backend,
                "home": str(home),
                "path": str(new.path),
                "fingerprint": new.fingerprint,
                "schema": schema,
            },
            env,
        )
        wait_ready(p)
        landed = kill_at(p, rng.uniform(0, duration * 1.1))
        problems += check_partition(partition(backend, home, schema), [old, new], "after the kill")
        load(backend, home, new, schema)  # the retry
        problems += check_partition(partition(backend, home, schema), [new], "after the retry")
        if rerun:
            load(backend, home, new, schema)  # and once more: re-running changes nothing
            problems += check_partition(partition(backend, home, schema), [new], "after a re-run")
    except Exception as e:  # noqa: BLE001 - a retry that cannot recover is what this counts
        problems.append(f"{type(e).__name__}: {e}"[:300])
        landed = "error"
    finally:
        if schema:
            _drop_schema(schema)
    tally.record(kind, problems, landed)


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def disk_full_round(
    tally: Tally,
    work: Path,
    old: Delivery,
    new: Delivery,
    base: Path | None = None,
    rng: random.Random | None = None,
) -> bool:
    """FINOPS_HOME on a tmpfs that holds the first month but not the restated one's load. With
    `rng`, the space left is a random 2-90 % of the warehouse file's size (ENOSPC lands at a
    random point of the load: staging, the insert, the commit), else 256 KiB."""
    mnt = work / f"tmpfs-{tally.injected['disk_full']}"
    mnt.mkdir(parents=True)
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        return False
    problems: list[str] = []
    landed = ""
    try:
        seed_old("duckdb", mnt, old, None, base)
        ballast = mnt / "ballast"  # fill the rest, leaving too little for the load's writes
        free = shutil.disk_usage(mnt).free
        share = rng.uniform(0.02, 0.9) if rng else 0.0
        leave = int((mnt / "warehouse.duckdb").stat().st_size * share) if rng else 256 * 1024
        landed = f"{leave // 1024} KiB left ({share:.0%} of the file)" if rng else ""
        with open(ballast, "wb") as f:
            f.truncate(0)
            f.write(b"\0" * max(0, free - leave))
        home_before = os.environ.get("FINOPS_HOME")
        os.environ["FINOPS_HOME"] = str(mnt)  # staging and DuckDB's spill files land there too
        try:
            load("duckdb", mnt, new)
            problems.append("the load succeeded on a full disk (fault not injected)")
        except Exception as e:  # noqa: BLE001 - the fault itself
            if "space" not in str(e).lower() and "ENOSPC" not in str(e) and "28" not in str(e):
                problems.append(f"failed, but not for the disk: {type(e).__name__}: {e}"[:300])
        finally:
            if home_before is not None:
                os.environ["FINOPS_HOME"] = home_before
        ballast.unlink()
        problems += check_partition(partition("duckdb", mnt), [old], "after ENOSPC")
        load("duckdb", mnt, new)  # space freed: the retry
        problems += check_partition(partition("duckdb", mnt), [new], "after the retry")
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    tally.record("disk_full", problems, landed)
    return True


def pg_disk_full_round(tally: Tally, work: Path, old: Delivery, new: Delivery, rng: random.Random) -> bool:
    """PostgreSQL's own disk full: the throw-away schema's focus_costs (and its indexes) moved to
    a tablespace on a tmpfs (mount: needs root; the server must run on this host as `postgres`),
    which holds the loaded month; ballast leaves a random 5-90 % of what the restated month
    needs, so the COPY fails with SQLSTATE 53100 (disk_full) at a random point of it. Then the
    ballast goes and the load runs again. False when the tablespace could not be set up."""
    import psycopg

    i = tally.injected["pg_disk_full"]
    schema, space = f"chaos_pgfull_{os.getpid()}_{i}", f"chaos_pgfull_{os.getpid()}_{i}"
    mnt = Path(tempfile.mkdtemp(prefix="finops-pgfull-"))  # not under `work`: the server must reach it
    mnt.chmod(0o755)
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=200m,mode=0755", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        mnt.rmdir()
        return False
    problems: list[str] = []
    landed = ""
    try:
        (mnt / "pg").mkdir()
        if subprocess.run(["chown", "postgres:postgres", str(mnt / "pg")], capture_output=True).returncode:
            return False
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            try:
                c.execute(f"CREATE TABLESPACE \"{space}\" LOCATION '{mnt / 'pg'}'")
            except psycopg.Error:
                return False  # not a superuser, or the server runs elsewhere
        home = work / f"pgfull-{i}"
        home.mkdir(parents=True)
        open_wh("postgres", home, schema).close()  # the schema's tables, then focus_costs moved
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'ALTER TABLE "{schema}".focus_costs SET TABLESPACE "{space}"')
            for (idx,) in c.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'focus_costs'",
                [schema],
            ).fetchall():
                c.execute(f'ALTER INDEX "{schema}"."{idx}" SET TABLESPACE "{space}"')
        load("postgres", home, old, schema)
        used = shutil.disk_usage(mnt).used
        ballast = mnt / "ballast"
        share = rng.uniform(0.05, 0.9)
        with open(ballast, "wb") as f:
            f.write(b"\0" * max(0, shutil.disk_usage(mnt).free - int(used * share)))
        landed = f"{share:.0%} of the month's space left"
        try:
            load("postgres", home, new, schema)
            problems.append("the load succeeded on a full disk (fault not injected)")
        except Exception as e:  # noqa: BLE001 - the fault itself
            state = getattr(e.__cause__, "sqlstate", None)
            if state != "53100":  # disk_full
                problems.append(f"failed, but not for the disk ({state}): {type(e).__name__}: {e}"[:300])
            landed += f", {state} at COPY row {_copy_row(str(e))}"
        problems += check_partition(partition("postgres", home, schema), [old], "after disk_full")
        ballast.unlink()
        load("postgres", home, new, schema)  # space freed: the retry
        problems += check_partition(partition("postgres", home, schema), [new], "after the retry")
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            c.execute("CHECKPOINT")
            c.execute(f'DROP TABLESPACE IF EXISTS "{space}"')
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        mnt.rmdir()
    tally.record("pg_disk_full", problems, landed)
    return True


def cut_file_round(
    tally: Tally, work: Path, old: Delivery, new: Delivery, rng: random.Random, base: Path | None = None
) -> None:
    """The restated month loaded and checkpointed, then the file cut short by 1-4096 bytes (its
    last write lost, as a crash of the storage can). No recovery is possible from the file
    itself: what counts is that the next run refuses it with a message naming the file and the
    cause, and never reads partial data (no totals at all rather than wrong ones)."""
    home = work / f"cut-{tally.injected['cut_file']}"
    home.mkdir(parents=True)
    problems: list[str] = []
    landed = ""
    try:
        seed_old("duckdb", home, old, None, base)
        load("duckdb", home, new)
        db = home / "warehouse.duckdb"
        cut = rng.randint(1, 4096)
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size - cut)
        for step in ("the next run", "its retry"):
            try:
                got = partition("duckdb", home)
            except Exception as e:  # noqa: BLE001 - a refusal is the expected outcome
                if str(db) not in str(e) or "IO Error" not in str(e):
                    problems.append(f"{step}: refused, but without naming the file and the cause: {e}"[:300])
                landed = f"cut by {cut} B: refused, '{str(e).split(': ', 1)[-1][:60]}...'"
                continue
            problems += check_partition(got, [old, new], f"{step}, after the cut")
            landed = f"cut by {cut} B: opened, totals intact"
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
    tally.record("cut_file", problems, landed)


def _copy_row(msg: str) -> str:
    """The row PostgreSQL's COPY context line names ("COPY focus_costs, line 1234")."""
    import re

    m = re.search(r"COPY \w+, line (\d+)", msg)
    return m.group(1) if m else "?"


def torn_wal_round(
    tally: Tally,
    work: Path,
    old: Delivery,
    new: Delivery,
    rng: random.Random,
    base: Path | None = None,
    duration: float = 0.0,
) -> None:
    """Kill the restated load mid-load (half the rounds, when `duration` is known) or right after
    its commit, before it closes (DuckDB checkpoints on close), then tear the last write: the
    WAL's when there is one (cut short, garbage appended), else the file's tail."""
    home = work / f"torn-{tally.injected['torn_wal']}"
    home.mkdir(parents=True)
    problems: list[str] = []
    landed = ""
    try:
        seed_old("duckdb", home, old, None, base)
        p = spawn(
            "load",
            {
                "backend": "duckdb",
                "home": str(home),
                "path": str(new.path),
                "fingerprint": new.fingerprint,
                "hold": True,
            },
            {**os.environ, "FINOPS_HOME": str(home)},
        )
        if duration and rng.random() < 0.5:  # mid-load: the WAL may hold a half-written transaction
            wait_ready(p)
            landed = kill_at(p, rng.uniform(0, duration)) + " mid-load, "
        else:  # committed, not closed
            wait_ready(p, "DONE")
            landed = "after the commit, "
        p.send_signal(signal.SIGKILL)
        p.wait()
        wal = home / "warehouse.duckdb.wal"
        if wal.exists() and wal.stat().st_size > 0:
            size = wal.stat().st_size
            with open(wal, "r+b") as f:
                f.truncate(max(0, size - rng.randint(1, min(4096, size))))
                f.seek(0, 2)
                f.write(os.urandom(rng.randint(1, 512)))
            landed += "wal torn"
        else:  # DuckDB checkpointed the commit into the file already: tear the file's tail instead
            db = home / "warehouse.duckdb"
            with open(db, "r+b") as f:
                f.seek(0, 2)
                f.write(os.urandom(rng.randint(1, 4096)))  # a partial block past the last one written
            landed += "file tail torn (no WAL left)"
        got = partition("duckdb", home)
        problems += check_partition(got, [old, new], "after the torn write")
        landed += (
            ", then the old month" if got[1].quantize(CENT) == old.billed.quantize(CENT) else ", then the new"
        )
        load("duckdb", home, new)
        problems += check_partition(partition("duckdb", home), [new], "after the retry")
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
        landed = landed or "error"
    tally.record("torn_wal", problems, landed)


# ---------------------------------------------------------------- policy kinds ---------------
def _policy_parts(args: dict[str, Any]):  # type: ignore[no-untyped-def]
    from finops.policies.actions.aws import AwsActions
    from finops.policies.engine import Cloud
    from finops.policies.inventory.aws import AwsInventory
    from finops.policies.model import Policy
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    os.environ["AIRFLOW_CONN_AWS_CHAOS"] = json.dumps(
        {
            "conn_type": "aws",
            "login": "testing",
            "password": "testing",
            "extra": {
                "endpoint_url": args["endpoint"],
                "region_name": "us-east-1",
                "config_kwargs": {
                    "connect_timeout": 2,
                    "read_timeout": 2,
                    "retries": {"mode": "standard", "max_attempts": 8},
                },
            },
        }
    )
    inv = AwsInventory("aws_chaos", "us-east-1", account="123456789012")
    policy = Policy.model_validate(
        {
            "name": "idle-gpu",
            "kind": "idle",
            "action": "stop",
            "scope": {"providers": ["aws"]},
            "idle": {"hours": 1, "gpu_util_below": 5},
            "min_age_hours": 0,
            "grace_hours": 24,
            "max_actions_per_run": 100,
        }
    )
    wh = DuckDBWarehouse(Path(args["home"]) / "warehouse.duckdb")
    wh.migrate()
    return Cloud(inv, AwsActions("aws_chaos", "us-east-1", ec2=inv.ec2)), policy, wh


def _seed_fleet(endpoint: str, n: int) -> dict[str, str]:
    import boto3
    import requests

    from finops.demo.fleet import launch, put_gpu_metrics
    from finops.policies.decide import format_mark

    requests.post(f"{endpoint}/moto-api/reset", timeout=60)
    kw = {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    ec2, cw = boto3.client("ec2", **kw), boto3.client("cloudwatch", **kw)
    from datetime import UTC, datetime, timedelta

    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    want: dict[str, str] = {}
    for i in range(n):
        tags = {"owner": "alice@example.com", "team": "ml"}
        if i % 2 == 0:
            tags["finops-idle-marked"] = old
        iid = launch(ec2, f"idle-{i}", tags, itype="g5.xlarge", age_h=48)
        put_gpu_metrics(cw, iid, 1.0, 1.5)
        want[iid] = "stop" if i % 2 == 0 else "mark"
    return want


def _reread_without_effect(action: str, result: str) -> bool:
    """An `unknown` row whose reconciling run re-read the resource and found the action not in
    effect (finops.policies.engine._reconcile writes `state <s>, mark <present|absent>`)."""
    if "re-read by run" not in result:
        return False
    if action == "stop":
        return "state running," in result
    return action == "mark" and "mark absent" in result


def check_policy(endpoint: str, home: Path, want: dict[str, str]) -> list[str]:
    """After the retry: every instance to stop is stopped, every one to mark is marked, each by
    exactly one audit row that says it happened (done, or unknown when its run died between the
    call and the outcome; an unknown row whose re-read found the action not in effect does not
    count), no row claims what did not happen, and nothing else was touched."""
    import boto3

    from finops.policies import audit
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    ec2 = boto3.client(
        "ec2",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    now = {
        i["InstanceId"]: (i["State"]["Name"], {t["Key"] for t in i.get("Tags", [])})
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
    }
    wh = DuckDBWarehouse(home / "warehouse.duckdb")
    try:
        rows = wh.query("SELECT resource_id, action, status, result, dry_run FROM policy_actions")
    finally:
        wh.close()
    problems = []
    acted: Counter = Counter()
    for rid, action, status, result, dry in rows:
        outcome = audit.outcome_of(status, result, dry)
        if outcome in ("untruthful", "reserved") or status == audit.PENDING:
            problems.append(f"{rid} {action}: row left {status} / {outcome}: {result[:120]}")
        if action in ("mark", "stop") and outcome in ("done", "unknown"):
            if outcome == "unknown" and _reread_without_effect(action, result):
                # killed between its pending row and the call: the next run re-read the resource,
                # found the action not in effect (so it acted itself), and says so in this row
                continue
            acted[(rid, action)] += 1
        if outcome == "done" and action == "stop" and now[rid][0] not in ("stopping", "stopped"):
            problems.append(f"{rid}: audited as stopped, but {now[rid][0]}")
    for iid, action in want.items():
        state, tags = now[iid]
        if action == "stop" and state not in ("stopping", "stopped"):
            problems.append(f"{iid}: to stop, still {state}")
        if action == "mark" and ("finops-idle-marked" not in tags or state != "running"):
            problems.append(f"{iid}: to mark, {state} with tags {sorted(tags)}")
        if acted[(iid, action)] != 1:
            problems.append(f"{iid}: {action} recorded {acted[(iid, action)]} times as done / unknown")
    return problems


def policy_kill_round(
    tally: Tally, work: Path, endpoint: str, n: int, rng: random.Random, duration: float
) -> None:
    home = work / f"policy-{tally.injected['kill_policy']}"
    home.mkdir(parents=True)
    want = _seed_fleet(endpoint, n)
    run_id = f"scheduled__chaos-{tally.injected['kill_policy']}"
    args = {"endpoint": endpoint, "home": str(home), "run_id": run_id}
    problems: list[str] = []
    try:
        p = spawn("policy", args, {**os.environ, "FINOPS_HOME": str(home)})
        wait_ready(p)
        landed = kill_at(p, rng.uniform(0, duration * 1.1))
        retry_policy(args, problems)
        problems += check_policy(endpoint, home, want)
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
        landed = "error"
    tally.record("kill_policy", problems, landed)


def retry_policy(args: dict[str, Any], problems: list[str]) -> None:
    """The Airflow retry: the same run id, in a fresh process state (here: this process)."""
    from finops.policies.engine import run_policy

    cloud, policy, wh = _policy_parts(args)
    try:
        for attempt in range(3):  # Airflow's retries
            try:
                run_policy(policy, cloud, wh, dry_run=False, run_id=args["run_id"])
                return
            except Exception as e:  # noqa: BLE001 - the next try is what Airflow would do
                if attempt == 2:
                    problems.append(f"retries failed: {type(e).__name__}: {e}"[:300])
    finally:
        wh.close()


def cloud_errors_round(tally: Tally, work: Path, endpoint: str, n: int, rng: random.Random) -> Counter:
    """The policy through a fault proxy that breaks about a third of the calls."""
    from finops_chaos_proxy import FaultProxy  # type: ignore[import-not-found]

    home = work / f"faults-{tally.injected['cloud_errors']}"
    home.mkdir(parents=True)
    want = _seed_fleet(endpoint, n)
    problems: list[str] = []
    with FaultProxy(endpoint, rate=0.3, rng=rng) as proxy:
        args = {
            "endpoint": proxy.url,
            "home": str(home),
            "run_id": f"faults-{tally.injected['cloud_errors']}",
        }
        try:
            retry_policy(args, problems)
        except Exception as e:  # noqa: BLE001
            problems.append(f"{type(e).__name__}: {e}"[:300])
        faults = Counter(proxy.injected)
    # the next scheduled run (no faults) finishes what the faults left
    retry_policy({**args, "endpoint": endpoint, "run_id": args["run_id"] + "-next"}, problems)
    problems = [p for p in problems if not p.startswith("retries failed")]
    problems += check_policy(endpoint, home, want)
    tally.record("cloud_errors", problems, ", ".join(f"{k} {v}" for k, v in sorted(faults.items())))
    return faults


# ---------------------------------------------------------------- benchmark kinds ------------
BENCH_TARGET = {
    "provider": "aws",
    "region": "us-east-1",
    "instance_type": "p5.48xlarge",
    "pricing_model": "ondemand",
    "image_id": "ami-0abcdef1234567890",
    "gpu_count": 8,
}


def _bench_parts(args: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Settings, the real AWS launcher on moto, the warehouse and the upload-URL signer."""
    import boto3

    from finops.gpubench.launchers.aws import AwsLauncher
    from finops.gpubench.payload import S3PayloadStore
    from finops.gpubench.settings import parse_settings
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    settings = parse_settings(
        {
            "results_conn_id": "aws_chaos",
            "results_bucket": "bench-results",
            "ttl_minutes": 30,
            "max_instances": 8,
            "max_running": 64,
            "targets": [BENCH_TARGET],
        }
    )
    ec2 = boto3.client(
        "ec2",
        endpoint_url=args["endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3 = boto3.client(
        "s3",
        endpoint_url=args["endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    def presign(uri: str, expires_in: int) -> str:
        """What operators.make_presign does, without importing Airflow's S3 hook (seconds of a
        worker's start)."""
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        return str(
            s3.generate_presigned_url(
                "put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires_in
            )
        )

    try:  # the bundle is over EC2's user-data limit: it waits in the results bucket (payload.py)
        s3.create_bucket(Bucket="bench-results")
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    payloads = S3PayloadStore(s3, "bench-results", settings.results_prefix)
    wh = DuckDBWarehouse(Path(args["home"]) / "warehouse.duckdb")
    wh.migrate()
    return settings, AwsLauncher(ec2, settings.targets[0], max_running=64), wh, presign, payloads


def _bench_prepared(n: int, tag: str, now: Any) -> list[dict[str, Any]]:
    """`n` benchmark runs (one target each), as the DAG's prepare task hands them on."""
    from finops.gpubench import lifecycle
    from finops.gpubench.settings import parse_settings

    settings = parse_settings({"ttl_minutes": 30, "targets": [BENCH_TARGET]})
    targets, _ = lifecycle.plan(settings)
    return [lifecycle.prepare(settings, targets[0], f"scheduled__{tag}-{k}", now=now) for k in range(n)]


def _moto_reset(endpoint: str) -> None:
    import requests

    requests.post(f"{endpoint}/moto-api/reset", timeout=60)


def _drain(p: subprocess.Popen) -> tuple[list[str], threading.Thread]:
    """After READY: collect the worker's stage lines (LAUNCHED k / TORNDOWN k) as they come;
    the thread ends when the process has (its pipe closes)."""
    lines: list[str] = []

    def read() -> None:
        for line in p.stdout or []:
            lines.append(line.strip())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return lines, t


def _wait_for(p: subprocess.Popen, until: str = "READY") -> None:
    while p.stdout:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"worker ended before {until} (rc {p.poll()})")
        if line.strip().startswith(until):
            return


def check_bench(endpoint: str, home: Path, bench_runs: list[str]) -> tuple[list[str], Counter]:
    """Nothing left running; every instance ended by exactly one terminate / reap row that says
    done or unknown; every bench run launched exactly once (one instance, one launch row that
    says done); no row pending, none untruthful. Also returns the rows a retry settled."""
    import boto3

    from finops.gpubench import audit as bench_audit
    from finops.policies import audit
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    ec2 = boto3.client(
        "ec2",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    instances = {
        i["InstanceId"]: (i["State"]["Name"], {t["Key"]: t["Value"] for t in i.get("Tags", [])})
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
    }
    wh = DuckDBWarehouse(home / "warehouse.duckdb")
    try:
        rows = wh.query(
            "SELECT resource_id, action, status, result, dry_run, evidence FROM policy_actions WHERE policy = ?",
            [bench_audit.POLICY],
        )
    finally:
        wh.close()
    problems = []
    ended: Counter = Counter()
    launched: Counter = Counter()
    settled: Counter = Counter()  # rows a killed try left pending, settled by the next one
    for rid, action, status, result, dry, evidence in rows:
        outcome = audit.outcome_of(status, result, dry)
        if outcome == "untruthful" or status == audit.PENDING:
            problems.append(f"{rid} {action}: row left {status} / {outcome}: {result[:120]}")
        if action in ("terminate", "reap") and outcome in ("done", "unknown"):
            ended[rid] += 1
        if action == "launch" and outcome in ("done", "unknown"):
            launched[rid] += 1
        if "reconciled" in (evidence or ""):
            settled[f"{action} {status}"] += 1
    per_run: Counter = Counter()
    for iid, (state, tags) in instances.items():
        if tags.get("finops:benchmark") != "true":
            continue
        per_run[tags.get("finops:bench-run-id", "")] += 1
        if state not in ("shutting-down", "terminated"):
            problems.append(f"{iid}: left {state}")
        if ended[iid] != 1:
            problems.append(f"{iid}: its end recorded {ended[iid]} times as done / unknown")
    for bid in bench_runs:
        if per_run[bid] != 1 or launched[bid] != 1:
            problems.append(
                f"bench run {bid}: {per_run[bid]} instance(s), {launched[bid]} launch row(s) done"
            )
    return problems, settled


def _settled_note(settled: Counter) -> str:
    return "; settled " + ", ".join(f"{k} {v}" for k, v in sorted(settled.items())) if settled else ""


def bench_kill_round(
    tally: Tally, work: Path, endpoint: str, n: int, rng: random.Random, duration: float
) -> None:
    """Benchmark runs (launch, then teardown) in a real process, SIGKILLed at a random moment;
    then what Airflow does: the killed task retried (launch, or teardown), the runs not reached
    done as usual, and the hourly reaper past every expiry, which must find nothing."""
    from datetime import UTC, datetime, timedelta

    from finops.gpubench import lifecycle

    i = tally.injected["kill_bench"]
    home = work / f"bench-{i}"
    home.mkdir(parents=True)
    _moto_reset(endpoint)
    now = datetime.now(UTC)
    prepared = _bench_prepared(n, f"chaos-{i}", now)
    args = {"endpoint": endpoint, "home": str(home), "prepared": prepared}
    problems: list[str] = []
    landed = "error"
    try:
        p = spawn("bench", args, {**os.environ, "FINOPS_HOME": str(home)})
        _wait_for(p)
        lines, reader = _drain(p)
        landed = kill_at(p, rng.uniform(0, duration * 1.1))
        reader.join(10)  # everything the process wrote before it died
        left = [k for k in range(n) if f"TORNDOWN {k}" not in lines]
        stage = ("teardown" if f"LAUNCHED {left[0]}" in lines else "launch") if left else ""
        settings, launcher, wh, presign, payloads = _bench_parts(args)
        try:
            for k in left:  # the killed task's retry, then the runs it never reached
                if f"LAUNCHED {k}" not in lines:
                    lifecycle.launch(
                        prepared[k],
                        settings,
                        launcher,
                        dry_run=False,
                        wh=wh,
                        presign=presign,
                        payloads=payloads,
                    )
                lifecycle.terminate(
                    prepared[k], launcher, dry_run=False, wh=wh, poll_s=0.01, sleep=time.sleep
                )
            rep = lifecycle.reap(
                [launcher], dry_run=False, wh=wh, run_id=f"reaper-{i}", now=now + timedelta(hours=2), cap=50
            )
            if rep["terminated"]:
                problems.append(f"the teardown left {rep['terminated']} for the reaper")
        finally:
            wh.close()
        landed += f" during the {stage}" if landed == "killed" and stage else ""
        found, settled = check_bench(endpoint, home, [x["bench_run_id"] for x in prepared])
        problems += found
        landed += _settled_note(settled)
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
    tally.record("kill_bench", problems, landed)


def reaper_kill_round(
    tally: Tally, work: Path, endpoint: str, n: int, rng: random.Random, duration: float
) -> None:
    """`n` expired benchmark instances; the reaper (live, cap `n`) in a real process, SIGKILLed at
    a random moment; then its retries (same run id). All must end, each on record once, within
    the one cap."""
    from datetime import UTC, datetime, timedelta

    from finops.gpubench import lifecycle

    i = tally.injected["kill_reaper"]
    home = work / f"reaper-{i}"
    home.mkdir(parents=True)
    _moto_reset(endpoint)
    args = {"endpoint": endpoint, "home": str(home), "run_id": f"scheduled__reaper-{i}", "cap": n}
    problems: list[str] = []
    landed = "error"
    try:
        prepared = _bench_prepared(n, f"expired-{i}", datetime.now(UTC) - timedelta(hours=2))
        settings, launcher, wh, presign, payloads = _bench_parts(args)
        try:  # launched two hours ago, their audit rows elsewhere: only the reaper is under test here
            for prep in prepared:
                lifecycle.launch(
                    prep, settings, launcher, dry_run=False, wh=None, presign=presign, payloads=payloads
                )
        finally:
            wh.close()
        p = spawn("reaper", args, {**os.environ, "FINOPS_HOME": str(home)})
        _wait_for(p)
        _drain(p)  # never let a full pipe block it
        landed = kill_at(p, rng.uniform(0, duration * 1.1))
        settings, launcher, wh, presign, payloads = _bench_parts(args)
        try:
            for attempt in range(3):  # Airflow's retries of the same run
                try:
                    rep = lifecycle.reap([launcher], dry_run=False, wh=wh, run_id=args["run_id"], cap=n)
                    if rep["capped"]:
                        problems.append(
                            f"capped after the kill: {rep['capped']} (the cap counted a call twice)"
                        )
                    break
                except Exception as e:  # noqa: BLE001
                    if attempt == 2:
                        problems.append(f"retries failed: {type(e).__name__}: {e}"[:300])
        finally:
            wh.close()
        found, settled = check_bench(endpoint, home, [])
        problems += found
        landed += _settled_note(settled)
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}"[:300])
    tally.record("kill_reaper", problems, landed)


def _timed(kind: str, args: dict[str, Any], home: Path) -> float:
    """Seconds a worker takes from READY to its end: the window its kills are drawn from."""
    p = spawn(kind, args, {**os.environ, "FINOPS_HOME": str(home)})
    _wait_for(p)
    t0 = time.monotonic()
    _wait_for(p, "DONE")  # not its exit: tearing down the interpreter is no part of the work
    took = time.monotonic() - t0
    _drain(p)
    p.wait()
    return took


def calibrate_bench(work: Path, endpoint: str, n: int) -> tuple[float, float]:
    """Seconds one worker process takes for `n` launches + teardowns, and for reaping `n`."""
    from datetime import UTC, datetime, timedelta

    from finops.gpubench import lifecycle

    home = work / "bench-calibrate"
    home.mkdir()
    _moto_reset(endpoint)
    args: dict[str, Any] = {"endpoint": endpoint, "home": str(home), "run_id": "calibrate", "cap": n}
    _timed(
        "bench", {**args, "prepared": _bench_prepared(n, "warm-up", datetime.now(UTC))}, home
    )  # moto's first
    bench = _timed("bench", {**args, "prepared": _bench_prepared(n, "calibrate", datetime.now(UTC))}, home)
    settings, launcher, wh, presign, payloads = _bench_parts(args)
    try:
        for prep in _bench_prepared(n, "calibrate-old", datetime.now(UTC) - timedelta(hours=2)):
            lifecycle.launch(
                prep, settings, launcher, dry_run=False, wh=None, presign=presign, payloads=payloads
            )
    finally:
        wh.close()
    return bench, _timed("reaper", args, home)


# ---------------------------------------------------------------- driver ---------------------
def load_proxy() -> None:
    """bench/ is not a package: import its chaos_proxy.py by path, once."""
    import importlib.util

    if "finops_chaos_proxy" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "finops_chaos_proxy", Path(__file__).with_name("chaos_proxy.py")
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["finops_chaos_proxy"] = mod
    spec.loader.exec_module(mod)


def run(rounds: int, rows: int, seed: int, fleet: int, only: list[str], work: Path) -> Tally:
    from moto.server import ThreadedMotoServer

    load_proxy()

    import logging

    for name in ("werkzeug", "moto", "botocore", "finops", "airflow"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    rng = random.Random(seed)
    tally = Tally()
    os.environ.setdefault("FINOPS_HOME", str(work / "home"))
    billing = {
        "kill_load_duckdb",
        "kill_load_postgres",
        "disk_full",
        "pg_disk_full",
        "torn_wal",
        "cut_file",
    } & set(only)
    if billing:
        old, new = make_deliveries(work / "exports", rows, seed)
        t0 = time.monotonic()
        (work / "calibrate").mkdir()
        load("duckdb", work / "calibrate", old)  # how long one load takes: kills land inside it
        duration = time.monotonic() - t0
    small: tuple[Delivery, Delivery] | None = None
    for _ in range(rounds if billing else 0):
        for kind in only:
            if kind == "torn_wal" and tally.injected[kind] % 2:
                # a month small enough that its commit stays in the WAL (DuckDB checkpoints a
                # commit into the file once the WAL passes its threshold): the WAL's tail is torn
                small_old, small_new = small or make_deliveries(
                    work / "exports-small", min(rows, 1500), seed + 1
                )
                small = small_old, small_new
                torn_wal_round(tally, work, small_old, small_new, rng)
            elif kind == "kill_load_duckdb":
                billing_round(tally, kind, "duckdb", work, old, new, rng, duration)
            elif kind == "kill_load_postgres":
                billing_round(tally, kind, "postgres", work, old, new, rng, duration * 2)
            elif kind == "disk_full" and not disk_full_round(tally, work, old, new, rng=rng):
                tally.notes["disk_full: not run (tmpfs mount refused: needs root)"] += 1
            elif kind == "pg_disk_full" and not pg_disk_full_round(tally, work, old, new, rng):
                tally.notes["pg_disk_full: not run (needs root and the server on this host)"] += 1
            elif kind == "cut_file":
                cut_file_round(tally, work, old, new, rng)
            elif kind == "torn_wal":
                torn_wal_round(tally, work, old, new, rng, duration=duration)
    if {"kill_policy", "cloud_errors", "kill_bench", "kill_reaper"} & set(only):
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        try:
            pduration = 0.0
            if {"kill_policy", "cloud_errors"} & set(only):
                home = work / "policy-calibrate"
                home.mkdir()
                _seed_fleet(endpoint, fleet)
                t0 = time.monotonic()
                retry_policy({"endpoint": endpoint, "home": str(home), "run_id": "calibrate"}, [])
                pduration = time.monotonic() - t0
            if {"kill_bench", "kill_reaper"} & set(only):
                bduration, rduration = calibrate_bench(work, endpoint, fleet)
            for _ in range(rounds):
                if "kill_policy" in only:
                    policy_kill_round(tally, work, endpoint, fleet, rng, pduration)
                if "cloud_errors" in only:
                    cloud_errors_round(tally, work, endpoint, fleet, rng)
                if "kill_bench" in only:
                    bench_kill_round(tally, work, endpoint, fleet, rng, bduration)
                if "kill_reaper" in only:
                    reaper_kill_round(tally, work, endpoint, fleet, rng, rduration)
        finally:
            server.stop()
    return tally


def report(tally: Tally) -> str:
    lines = [f"{'fault':<20} {'injected':>8} {'survived':>8}"]
    for kind in KINDS:
        if tally.injected[kind]:
            lines.append(f"{kind:<20} {tally.injected[kind]:>8} {tally.survived[kind]:>8}")
    lines.append(f"{'total':<20} {sum(tally.injected.values()):>8} {sum(tally.survived.values()):>8}")
    lines.append(f"lost / doubled / left running: {len(tally.lost)}")
    lines += [f"  {p}" for p in tally.lost]
    lines.append("where the faults landed:")
    lines += [f"  {k}: {v}" for k, v in sorted(tally.notes.items())]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        _worker(sys.argv[2], json.loads(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--fleet", type=int, default=8, help="idle GPU instances per policy round")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--only", default=",".join(KINDS))
    a = ap.parse_args()
    only = [k for k in a.only.split(",") if k]
    unknown = set(only) - set(KINDS)
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    with tempfile.TemporaryDirectory(prefix="finops-chaos-") as tmp:
        t0 = time.monotonic()
        tally = run(a.rounds, a.rows, a.seed, a.fleet, only, Path(tmp))
        print(report(tally))
        print(f"{time.monotonic() - t0:.0f} s, seed {a.seed}, {a.rows} rows per delivery, fleet {a.fleet}")
    sys.exit(1 if tally.lost else 0)


if __name__ == "__main__":
    main()
