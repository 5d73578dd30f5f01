"""Local stand-ins for GCP BigQuery, Azure Blob Storage and the Lambda Cloud API, usable
outside pytest (the demo) and by the test fixtures alike, so both run against the same ones.

- `bigquery_emulator()`: bqemulator (DuckDB + SQLGlot) in-process on its own thread.
  Offline: its engine runs `INSTALL spatial` / `LOAD spatial` at start (GEOGRAPHY support,
  downloaded from extensions.duckdb.org) and refuses to start without it. Billing exports
  have no GEOGRAPHY columns, so `DuckDBEngine._load_spatial` is a no-op while it runs (and
  `_load_format_extensions`, best-effort Avro, is skipped too). Its Storage Read API (gRPC)
  reads tables but not the anonymous table a query's result lives in, which is what Google's
  client reads a large result from; `_serve_query_results_over_grpc` materialises that table
  on the first read, so extracts take the same Storage Read path as on BigQuery.
- `azurite()`: the Azurite blob service (`node_modules/.bin/azurite-blob`, put there by
  `npm ci`), in memory, on a free loopback port.
- `lambda_api()`: a stdlib HTTP server speaking the real `/api/v1/instances` and
  `/api/v1/instance-types` shapes, checking the Bearer API key, with 429 / 5xx injection.

Each yields its endpoint; given `conn_id`, it also sets `AIRFLOW_CONN_<ID>` (the connection
the matching source reads) for as long as it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from finops.paths import REPO_ROOT

# Azurite's public, documented development account key (not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
LAMBDA_API_KEY = "secret_lambda-demo-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conn_env_var(conn_id: str) -> str:
    return f"AIRFLOW_CONN_{conn_id.upper()}"


@contextlib.contextmanager
def airflow_connection(conn_id: str | None, conn: dict[str, Any]) -> Iterator[None]:
    """Set `AIRFLOW_CONN_<ID>` to `conn` (JSON) while inside; restore the old value after."""
    if conn_id is None:
        yield
        return
    var = conn_env_var(conn_id)
    old = os.environ.get(var)
    os.environ[var] = json.dumps(conn)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


@contextlib.contextmanager
def process_logging_kept() -> Iterator[None]:
    """Put the process's structlog configuration and root logger back as they were.

    bqemulator's start calls structlog.configure() with structlog's own filtering logger and
    logging.basicConfig(force=True), for the whole process. Airflow then finds structlog
    configured and keeps that: every hook's `.log` lacks the stdlib `.level` that slack_sdk's
    WebhookClient reads, so each Slack alert sent later in the process failed."""
    import structlog

    was_configured, saved = structlog.is_configured(), structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        if was_configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


# ------------------------------------------------------------------ GCP: bqemulator
_ANON_RESULT = re.compile(r'"(?P<schema>[A-Za-z0-9_.:-]+___bqemu_anonymous)"\."anon(?P<job>[0-9a-f]{32})"')
_GRPC_ENDPOINTS: dict[str, str] = {}  # emulator REST URL -> its gRPC host:port
STORAGE_READ_SESSIONS: dict[str, int] = {}  # emulator REST URL -> query results read over gRPC


def _serve_query_results_over_grpc(server: Any, url: str) -> None:
    """Let the emulator's Storage Read API read a query's anonymous result table: when a read
    names one that is not in DuckDB yet, create it from the job's result (which the emulator
    keeps in memory for its REST pages). A gap of the emulator filled here, not a change of
    what our code sends."""
    from bqemulator.jobs.executor import JOB_RESULTS

    engine = server._engine
    fetch = engine.fetch_arrow
    lock = threading.Lock()

    def fetch_arrow(sql: str, parameters: list[Any] | None = None) -> Any:
        for m in _ANON_RESULT.finditer(sql):
            flat = m["job"]
            job_id = f"{flat[:8]}-{flat[8:12]}-{flat[12:16]}-{flat[16:20]}-{flat[20:]}"
            result = JOB_RESULTS.get(job_id)
            if result is None:
                continue
            with lock:
                name = f"__finops_anon_{flat}"
                engine.connection.register(name, result)
                try:
                    engine.execute(f'CREATE SCHEMA IF NOT EXISTS "{m["schema"]}"')
                    engine.execute(f'CREATE TABLE IF NOT EXISTS {m[0]} AS SELECT * FROM "{name}"')
                finally:
                    engine.connection.unregister(name)
                STORAGE_READ_SESSIONS[url] = STORAGE_READ_SESSIONS.get(url, 0) + 1
        return fetch(sql, parameters)

    engine.fetch_arrow = fetch_arrow


class ThreadedBigQuery:
    """bqemulator on its own thread + event loop. (bqemulator.testing has one, but importing
    that package pulls in testcontainers / Docker, which we neither have nor need.)"""

    def __init__(self, settings: Any) -> None:
        from bqemulator.server import EmulatorServer

        self.server = EmulatorServer(settings)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="gcp-bqemu", daemon=True)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.server.start())
        except BaseException as e:  # noqa: BLE001 - surfaced by start()
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> None:
        with process_logging_kept():
            self._thread.start()
            ready = self._ready.wait(60)
        if not ready or self._error is not None:
            raise RuntimeError(f"bqemulator did not start: {self._error!r}")

    def stop(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def gcp_connection(endpoint: str, project: str) -> dict[str, Any]:
    """Connection for BigQueryHook; finops.sources.gcp_bigquery honours `api_endpoint`,
    `storage_api_endpoint` (the emulator's gRPC port) and `anonymous` (emulator only)."""
    extra: dict[str, Any] = {"project": project, "api_endpoint": endpoint, "anonymous": True}
    if endpoint in _GRPC_ENDPOINTS:
        extra["storage_api_endpoint"] = _GRPC_ENDPOINTS[endpoint]
    return {"conn_type": "google_cloud_platform", "extra": extra}


@contextlib.contextmanager
def bigquery_emulator(
    conn_id: str | None = None, project: str = "billing-proj", log_level: str = "warning"
) -> Iterator[str]:
    """A running in-process BigQuery emulator (ephemeral); yields its REST URL. `log_level`
    is its own ("info": one line per request); the process's logging is restored after its
    start reconfigured it (see process_logging_kept)."""
    from bqemulator.config import LogLevel, PersistenceMode, Settings
    from bqemulator.storage import engine as bq_engine

    saved = (bq_engine.DuckDBEngine._load_spatial, bq_engine.DuckDBEngine._load_format_extensions)
    # offline: no INSTALL spatial / format extensions. A deliberate patch of the emulator's
    # methods, restored below, which mypy reports as method-assign.
    bq_engine.DuckDBEngine._load_spatial = lambda self: None  # type: ignore[method-assign]
    bq_engine.DuckDBEngine._load_format_extensions = lambda self: None  # type: ignore[method-assign]
    settings = Settings(
        persistence_mode=PersistenceMode.EPHEMERAL,
        rest_host="127.0.0.1",
        rest_port=0,
        grpc_host="127.0.0.1",
        grpc_port=0,
        log_level=LogLevel(log_level),
    )
    emu = ThreadedBigQuery(settings)
    try:
        emu.start()
        url = emu.server.rest_url
        _GRPC_ENDPOINTS[url] = emu.server.grpc_endpoint
        _serve_query_results_over_grpc(emu.server, url)
        if conn_id is not None:
            os.environ.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
        with airflow_connection(conn_id, gcp_connection(url, project)):
            yield url
    finally:
        emu.stop()
        bq_engine.DuckDBEngine._load_spatial, bq_engine.DuckDBEngine._load_format_extensions = saved  # type: ignore[method-assign]


def bigquery_client(endpoint: str, project: str = "billing-proj") -> Any:
    """A google.cloud.bigquery.Client on the emulator (anonymous credentials)."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    return bigquery.Client(
        project=project,
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=endpoint),
    )


# ------------------------------------------------------------------ Azure: Azurite
def azurite_binary() -> str:
    local = REPO_ROOT / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    found = shutil.which("azurite-blob")
    if not found:
        raise RuntimeError("azurite-blob not found: run `make node-tools` (npm ci) in the repo root")
    return found


def azure_connection(connection_string: str) -> dict[str, Any]:
    return {"conn_type": "wasb", "extra": {"connection_string": connection_string}}


@contextlib.contextmanager
def azurite(conn_id: str | None = None, workdir: Path | None = None) -> Iterator[str]:
    """A running Azurite blob service (in memory); yields its connection string."""
    port = free_port()
    with contextlib.ExitStack() as stack:
        cwd = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="azurite-")))
        proc = subprocess.Popen(
            [
                azurite_binary(),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(port),
                "--inMemoryPersistence",
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--silent",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        try:
            _wait_for_port(port, proc)
            conn_str = (
                f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
            )
            with airflow_connection(conn_id, azure_connection(conn_str)):
                yield conn_str
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            if proc.stderr is not None:
                proc.stderr.close()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"azurite-blob did not start: {err[:500]}") from None
            time.sleep(0.2)


# ------------------------------------------------------------------ Lambda Cloud API
@dataclass
class LambdaApiState:
    """What the fake API serves; tests and the demo change it between polls."""

    api_key: str = LAMBDA_API_KEY
    instances: list[dict[str, Any]] = field(default_factory=list)
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # served before the next success
    calls: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fail_next(self, status: int, retry_after: str | None = None) -> None:
        with self.lock:
            self.failures.append((status, {"Retry-After": retry_after} if retry_after is not None else {}))

    def respond(self, path: str, authorization: str | None) -> tuple[int, dict[str, str], dict[str, Any]]:
        """(status, headers, JSON body) for one GET, in the real API's shapes."""
        from finops.demo.lambda_generator import instance_types_response

        with self.lock:
            self.calls.append(path)
            if authorization != f"Bearer {self.api_key}":
                return (
                    401,
                    {},
                    {"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}},
                )
            if path not in ("/api/v1/instances", "/api/v1/instance-types"):
                return 404, {}, {"error": {"code": "global/object-does-not-exist", "message": "Not found"}}
            if self.failures:
                status, headers = self.failures.pop(0)
                body = {
                    "error": {
                        "code": "global/quota-exceeded" if status == 429 else "global/unknown",
                        "message": "Too many requests" if status == 429 else "Internal error",
                    }
                }
                return status, headers, body
            if path == "/api/v1/instances":
                return 200, {}, {"data": list(self.instances)}
        return 200, {}, instance_types_response()


class _LambdaHandler(BaseHTTPRequestHandler):
    server: _LambdaServer

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        status, headers, body = self.server.state.respond(
            self.path.split("?", 1)[0], self.headers.get("Authorization")
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class _LambdaServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: LambdaApiState) -> None:
        super().__init__(("127.0.0.1", 0), _LambdaHandler)
        self.state = state


def lambda_connection(host: str, port: int, api_key: str) -> dict[str, Any]:
    """HTTP connection for finops.sources.lambda_cloud (API key in the password)."""
    return {"conn_type": "http", "host": host, "port": port, "schema": "http", "password": api_key}


@dataclass
class LambdaApi:
    url: str
    host: str
    port: int
    state: LambdaApiState


@contextlib.contextmanager
def lambda_api(conn_id: str | None = None, state: LambdaApiState | None = None) -> Iterator[LambdaApi]:
    """A running fake Lambda Cloud API on a free loopback port."""
    state = state or LambdaApiState()
    server = _LambdaServer(state)
    raw_host, port = server.server_address[0], server.server_address[1]
    host = raw_host.decode() if isinstance(raw_host, bytes) else raw_host  # AF_INET: always str
    thread = threading.Thread(target=server.serve_forever, name="lambda-api", daemon=True)
    thread.start()
    try:
        with airflow_connection(conn_id, lambda_connection(str(host), int(port), state.api_key)):
            yield LambdaApi(url=f"http://{host}:{port}", host=str(host), port=int(port), state=state)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
