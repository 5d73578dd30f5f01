"""The real Airflow 3 CeleryExecutor topology, without Docker: a fresh PostgreSQL metadata
database, a Redis broker, and `airflow api-server`, `scheduler`, `dag-processor`,
`triggerer` and `celery worker` as separate processes on loopback (what docker-compose.yaml
runs, one process per container there). Used by tests/integration and bench/.

`airflow db migrate` costs ~20 s on this machine, so a migrated template database is kept per
Airflow version (`ct_af_tpl_<version>`) and each topology gets its own copy
(`CREATE DATABASE ... TEMPLATE`), dropped again at stop.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import requests
from psycopg import sql

from tests.integration import procs

REPO = Path(__file__).resolve().parents[2]
AIRFLOW = [sys.executable, "-m", "airflow"]
ADMIN_USER = "admin"


class TopologyError(RuntimeError):
    """A service did not come up, or a precondition (PostgreSQL, Redis) is missing."""


# --------------------------------------------------------------------------- services we need
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_postgres(admin_dsn: str) -> None:
    try:
        with psycopg.connect(admin_dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        raise TopologyError(
            f"PostgreSQL is required for the distributed-executor test but is not reachable with DSN "
            f"{admin_dsn!r}: {e}. Start it (`make services` / scripts/ensure_services.sh) or set "
            "FINOPS_TEST_PG_DSN to a server where user postgres may CREATE DATABASE."
        ) from e


def check_redis(host: str, port: int) -> None:
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(b"PING\r\n")
            reply = s.recv(16)
    except OSError as e:
        raise TopologyError(
            f"Redis is required as the Celery broker of the distributed-executor test but {host}:{port} "
            f"is not reachable: {e}. Start it (`make services` / scripts/ensure_services.sh, or "
            "`redis-server --daemonize yes`) or set FINOPS_TEST_REDIS_URL."
        ) from e
    if not reply.startswith(b"+PONG"):
        raise TopologyError(f"{host}:{port} answered {reply!r} to PING: not a usable Redis (auth required?)")


def admin_dsn_from(dsn: str) -> str:
    """Same server as `dsn`, database `postgres` (where CREATE / DROP DATABASE run)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    info = conninfo_to_dict(dsn)
    info["dbname"] = "postgres"
    return make_conninfo(**info)


def sqlalchemy_url(admin_dsn: str, dbname: str) -> str:
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(admin_dsn)
    user = quote(info.get("user", "postgres"))
    pw = f":{quote(info['password'])}" if info.get("password") else ""
    return (
        f"postgresql+psycopg2://{user}{pw}@{info.get('host', '127.0.0.1')}:{info.get('port', 5432)}/{dbname}"
    )


# --------------------------------------------------------------------------- metadata DB
def _template_name() -> str:
    import airflow

    return "ct_af_tpl_" + airflow.__version__.replace(".", "_").replace("+", "_").replace("-", "_")


def _db_exists(conn: psycopg.Connection, name: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone())


def create_metadata_db(admin_dsn: str, env: dict[str, str], log_dir: Path) -> str:
    """A fresh, migrated Airflow metadata database; returns its name."""
    tpl = _template_name()
    name = f"ct_af_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5) as conn:
        # One builder at a time (parallel pytest workers / sessions share the server).
        conn.execute("SELECT pg_advisory_lock(hashtextextended('finops.ct.template', 0))")
        try:
            if not _db_exists(conn, tpl):
                build = f"{tpl}_build_{os.getpid()}"
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(build)))
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(build)))
                menv = dict(env, AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=sqlalchemy_url(admin_dsn, build))
                log_dir.mkdir(parents=True, exist_ok=True)
                log = log_dir / "db-migrate.log"
                try:
                    with log.open("wb") as fh:
                        rc = subprocess.run(
                            [*AIRFLOW, "db", "migrate"],
                            env=menv,
                            stdout=fh,
                            stderr=subprocess.STDOUT,
                            timeout=300,
                            check=False,
                        ).returncode
                    if rc != 0:
                        raise TopologyError(
                            f"airflow db migrate failed (exit {rc}):\n{log.read_text()[-3000:]}"
                        )
                except BaseException:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(build)))
                    raise
                conn.execute(
                    sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                        sql.Identifier(build), sql.Identifier(tpl)
                    )
                )
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(tpl))
            )
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended('finops.ct.template', 0))")
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


# --------------------------------------------------------------------------- the topology
@dataclass
class Topology:
    """Everything one running deployment needs; `stop()` undoes all of it."""

    home: Path
    admin_dsn: str
    redis_url: str
    extra_env: dict[str, str] = field(default_factory=dict)
    worker_concurrency: int = 4
    db_name: str | None = None
    api_port: int = 0
    queue: str = ""
    env: dict[str, str] = field(default_factory=dict)
    services: dict[str, procs.ServiceProcess] = field(default_factory=dict)
    workers: list[procs.ServiceProcess] = field(default_factory=list)
    password: str = ""
    _token: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def log_dir(self) -> Path:
        return self.home / "service-logs"

    # -- environment -------------------------------------------------------------------
    def build_env(self) -> dict[str, str]:
        """The environment every service shares (like x-airflow-common in docker-compose.yaml)."""
        af = self.home / "airflow"
        (af / "plugins").mkdir(parents=True, exist_ok=True)  # EMPTY: never the repo's plugins/
        self.password = secrets.token_urlsafe(12)
        pw_file = af / "simple_auth_manager_passwords.json"
        pw_file.write_text(json.dumps({ADMIN_USER: self.password}))
        self.api_port = self.api_port or free_port()
        self.queue = self.queue or f"ct_{uuid.uuid4().hex[:10]}"
        base = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__") and k != "AIRFLOW_HOME"}
        fernet = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
        env = {
            **base,
            "AIRFLOW_HOME": str(af),
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(af / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__CORE__FERNET_KEY": fernet,
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(pw_file),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
            # Retries after a lost worker: the DAGs back off exponentially from minutes; this global
            # cap keeps the test's retry within seconds without touching the DAG definitions.
            "AIRFLOW__CORE__MAX_TASK_RETRY_DELAY": "3",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__BASE_URL": self.api_url,
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__CELERY__BROKER_URL": self.redis_url,
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+"
            + sqlalchemy_url(self.admin_dsn, self.db_name or "postgres"),
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(self.worker_concurrency),
            "AIRFLOW__CELERY__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__TRIGGERER__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__OPERATORS__DEFAULT_QUEUE": self.queue,  # this deployment's own queue on the broker
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(af / "logs"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            # Short loops: this is a test deployment.
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
            # Only the runs a test triggers: no cron / asset-triggered runs competing for the worker.
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
            "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "2",
            # A shared 2-core CI box can starve the api-server for seconds: be patient, not flaky.
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",  # parse once: CPU is scarce
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW__DAG_PROCESSOR__STALE_DAG_THRESHOLD": "600",
            **self.extra_env,
        }
        if self.db_name:
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = sqlalchemy_url(self.admin_dsn, self.db_name)
        self.env = env
        return env

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 150.0) -> Topology:
        """Start every service; when a port picked free was taken before a service bound it
        (another test process on this machine), start again on fresh ports, at most 3 times."""
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except (TopologyError, TimeoutError) as e:
                if "address already in use" not in str(e) or attempt == 2:
                    raise
                self.stop()
                self.services.clear()
                self.workers.clear()
                self.api_port = 0
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> Topology:
        t0 = time.monotonic()
        self.home.mkdir(parents=True, exist_ok=True)
        self.build_env()
        self.db_name = create_metadata_db(self.admin_dsn, self.env, self.log_dir)
        atexit.register(self._atexit)  # interrupted runs too (pytest teardown is the normal path)
        self.build_env_db()
        self.timings["metadata_db_s"] = time.monotonic() - t0
        for name, argv in (
            ("api-server", [*AIRFLOW, "api-server", "--host", "127.0.0.1", "--port", str(self.api_port)]),
            ("scheduler", [*AIRFLOW, "scheduler"]),
            ("dag-processor", [*AIRFLOW, "dag-processor"]),
            ("triggerer", [*AIRFLOW, "triggerer"]),
        ):
            self.services[name] = procs.start(name, argv, env=self.env, cwd=REPO, log_dir=self.log_dir)
        self.start_worker()
        deadline = t0 + timeout
        procs.wait_until(
            "the api-server to answer /api/v2/monitor/health",
            self._api_up,
            max(5.0, deadline - time.monotonic()),
            on_timeout=self.diagnostics,
        )
        procs.wait_until(
            "scheduler, dag-processor and triggerer to report healthy",
            self._all_healthy,
            max(5.0, deadline - time.monotonic()),
            on_timeout=self.diagnostics,
        )
        self.timings["services_up_s"] = time.monotonic() - t0
        return self

    def build_env_db(self) -> None:
        assert self.db_name
        self.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = sqlalchemy_url(self.admin_dsn, self.db_name)
        self.env["AIRFLOW__CELERY__RESULT_BACKEND"] = "db+" + sqlalchemy_url(self.admin_dsn, self.db_name)

    def start_worker(self) -> procs.ServiceProcess:
        n = len(self.workers) + 1
        name = f"worker-{n}"
        w = procs.start(
            name,
            [
                *AIRFLOW,
                "celery",
                "worker",
                "-q",
                self.queue,
                "-c",
                str(self.worker_concurrency),
                "-H",
                f"ct{n}-{self.queue}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            env=self.env,
            cwd=REPO,
            log_dir=self.log_dir,
        )
        self.workers.append(w)
        self.services[name] = w
        return w

    def wait_worker_ready(self, worker: procs.ServiceProcess, timeout: float = 90.0) -> None:
        procs.wait_until(
            f"{worker.name} to report ready",
            lambda: " ready." in worker.log_tail(200_000),
            timeout,
            on_timeout=self.diagnostics,
        )

    def stop(self) -> list[str]:
        """Stop every service (SIGTERM then SIGKILL per group), drop the database and broker keys.
        Returns what could not be cleaned (empty when all is well)."""
        problems: list[str] = []
        for svc in reversed(list(self.services.values())):
            try:
                svc.stop()
            except Exception as e:  # noqa: BLE001 - go on cleaning the rest
                problems.append(f"{svc.name}: {e!r}")
            left = svc.survivors()
            if left:
                problems.append(f"{svc.name}: processes still alive {left}")
        if self.db_name:
            try:
                drop_database(self.admin_dsn, self.db_name)
                self.db_name = None
            except Exception as e:  # noqa: BLE001
                problems.append(f"drop database {self.db_name}: {e!r}")
        with contextlib.suppress(Exception):
            self._purge_broker()
        return problems

    def _atexit(self) -> None:
        if self.db_name:
            procs.kill_all()
            with contextlib.suppress(Exception):
                drop_database(self.admin_dsn, self.db_name)

    def _purge_broker(self) -> None:
        import redis

        r = redis.Redis.from_url(self.redis_url, socket_timeout=3)
        keys = [k for k in r.scan_iter(match=f"*{self.queue}*")]
        if keys:
            r.delete(*keys)
        # A SIGKILLed worker leaves its unacknowledged messages in kombu's `unacked` hash.
        mine = [tag for tag, body in r.hgetall("unacked").items() if self.queue.encode() in body]
        if mine:
            r.hdel("unacked", *mine)
            r.zrem("unacked_index", *mine)

    # -- health ------------------------------------------------------------------------
    def _api_up(self) -> bool:
        for name in ("api-server",):
            if not self.services[name].alive():
                raise TopologyError(f"{name} exited:\n{self.services[name].log_tail()}")
        return requests.get(f"{self.api_url}/api/v2/monitor/health", timeout=3).status_code == 200

    def _all_healthy(self) -> bool:
        for svc in self.services.values():
            if not svc.alive():
                raise TopologyError(f"{svc.name} exited (rc={svc.popen.returncode}):\n{svc.log_tail()}")
        h = requests.get(f"{self.api_url}/api/v2/monitor/health", timeout=3).json()
        return all(
            (h.get(k) or {}).get("status") == "healthy" for k in ("scheduler", "triggerer", "dag_processor")
        )

    def diagnostics(self) -> str:
        parts = []
        for svc in self.services.values():
            state = "running" if svc.alive() else f"exited rc={svc.popen.returncode}"
            parts.append(f"----- {svc.name} ({state}) {svc.log_path}\n{svc.log_tail(2500)}")
        return "\n".join(parts)

    # -- REST API ----------------------------------------------------------------------
    def token(self, refresh: bool = False) -> str:
        if self._token is None or refresh:
            r = requests.post(
                f"{self.api_url}/auth/token",
                json={"username": ADMIN_USER, "password": self.password},
                timeout=10,
            )
            if r.status_code not in (200, 201):
                raise TopologyError(f"/auth/token answered {r.status_code}: {r.text[:300]}")
            self._token = r.json()["access_token"]
        return self._token

    def api(self, method: str, path: str, **kw: Any) -> Any:
        url = f"{self.api_url}/api/v2{path}"
        for attempt in range(2):
            r = requests.request(
                method, url, headers={"Authorization": f"Bearer {self.token(attempt > 0)}"}, timeout=30, **kw
            )
            if r.status_code != 401:
                break
        if r.status_code >= 400:
            raise TopologyError(f"{method} {path} -> {r.status_code}: {r.text[:500]}")
        return r.json() if r.content else None

    def wait_dag(self, dag_id: str, timeout: float = 90.0) -> dict:
        """Until the dag-processor has parsed and serialised `dag_id` (no import error)."""

        def parsed():
            errs = self.api("GET", "/importErrors")
            for e in errs.get("import_errors", []):
                if Path(e.get("filename", "")).name == f"{dag_id}.py":
                    raise TopologyError(f"import error in {dag_id}: {e.get('stack_trace', '')[-2000:]}")
            try:
                return self.api("GET", f"/dags/{dag_id}")
            except TopologyError:
                return None

        return procs.wait_until(
            f"DAG {dag_id} to be parsed", parsed, timeout, interval=1.0, on_timeout=self.diagnostics
        )

    def unpause(self, dag_id: str) -> None:
        self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})

    def trigger(self, dag_id: str, conf: dict, run_id: str | None = None) -> str:
        body = {"logical_date": None, "conf": conf, "dag_run_id": run_id or f"ct__{uuid.uuid4().hex[:12]}"}
        return self.api("POST", f"/dags/{dag_id}/dagRuns", json=body)["dag_run_id"]

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100})[
            "task_instances"
        ]

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> str:
        def done():
            state = self.run_state(dag_id, run_id)
            return state if state in ("success", "failed") else None

        def explain() -> str:
            tis = self.task_instances(dag_id, run_id)
            lines = [
                f"{t['task_id']}[{t.get('map_index')}] {t['state']} try={t.get('try_number')}" for t in tis
            ]
            return "\n".join(lines) + "\n" + self.diagnostics()

        return procs.wait_until(
            f"{dag_id} run {run_id} to finish", done, timeout, interval=1.0, on_timeout=explain
        )

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1) -> str:
        r = requests.get(
            f"{self.api_url}/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
            params={"map_index": map_index, "full_content": "true"},
            headers={"Authorization": f"Bearer {self.token()}", "Accept": "text/plain"},
            timeout=30,
        )
        return r.text


def remove_home(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
