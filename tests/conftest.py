"""Root test setup: isolated FINOPS_HOME / AIRFLOW_HOME per test session, set BEFORE Airflow
is imported, plus every fixture module in tests/fixtures/ (one per emulator / service)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_SESSION_TMP = Path(tempfile.mkdtemp(prefix="finops-test-"))

os.environ["FINOPS_HOME"] = str(_SESSION_TMP / "finops_home")
os.environ.setdefault("FINOPS_CONFIG", str(REPO / "include" / "config" / "finops.yaml"))
os.environ["AIRFLOW_HOME"] = str(_SESSION_TMP / "airflow")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
# The package is an installed plugin (entry point). Never point plugins_folder at plugins/: Airflow
# would exec every module there as a top-level file (and finops/warehouse/ would shadow stdlib names).
os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(_SESSION_TMP / "airflow" / "plugins")
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_SESSION_TMP}/airflow/airflow.db"
os.environ["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = "http://127.0.0.1:8080/execution/"
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO")
# Never talk to real clouds from tests.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

pytest_plugins = sorted(
    f"tests.fixtures.{p.stem}"
    for p in (REPO / "tests" / "fixtures").glob("*.py")
    if not p.name.startswith("_")
)

_TEMPLATE = REPO / ".finops-test" / "airflow-template.db"


def _migrate_template() -> Path:
    """`airflow db migrate` costs ~15 s: do it once per checkout + Airflow version, then copy."""
    import airflow

    stamp = _TEMPLATE.with_suffix(".version")
    if _TEMPLATE.exists() and stamp.exists() and stamp.read_text() == airflow.__version__:
        return _TEMPLATE
    _TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    tmp_home = Path(tempfile.mkdtemp(prefix="af-template-"))
    env = dict(os.environ, AIRFLOW_HOME=str(tmp_home))
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{tmp_home}/airflow.db"
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    part = _TEMPLATE.with_suffix(f".{os.getpid()}.part")
    shutil.copy(tmp_home / "airflow.db", part)
    os.replace(part, _TEMPLATE)  # atomic: parallel xdist workers never see half a file
    stamp.write_text(airflow.__version__)
    shutil.rmtree(tmp_home, ignore_errors=True)
    return _TEMPLATE


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow SQLite metadata DB for this session (for dag.test())."""
    home = Path(os.environ["AIRFLOW_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    db = home / "airflow.db"
    if not db.exists():
        shutil.copy(_migrate_template(), db)
    return db


@pytest.fixture(autouse=True)
def _fresh_alert_routes():
    """Alert sinks and the configured routes are process-wide (in production one task is one
    process). Between tests they leaked: an emit in one test (a task_failed callback, a
    quarantine) registered that test's routes, and a later test in the same worker posted to
    the earlier test's Slack fake, long gone ("1 alert deliveries failed")."""
    from finops.alerts import events, routing

    events.clear_sinks()
    routing._REGISTERED.clear()
    yield
    events.clear_sinks()
    routing._REGISTERED.clear()


@pytest.fixture
def finops_home(tmp_path, monkeypatch) -> Path:
    """A fresh, empty FINOPS_HOME for one test (warehouse, quarantine, raw cache)."""
    home = tmp_path / "finops_home"
    home.mkdir()
    monkeypatch.setenv("FINOPS_HOME", str(home))
    return home


@pytest.fixture
def duckdb_wh(finops_home):
    """A migrated embedded DuckDB warehouse in the test's FINOPS_HOME."""
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    wh = DuckDBWarehouse(warehouse_path())
    wh.migrate()
    yield wh
    wh.close()


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SESSION_TMP, ignore_errors=True)
    session.config._finops_exitstatus = int(exitstatus)  # type: ignore[attr-defined]


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """duckdb 2.0's nanobind bindings print pages of harmless 'leaked instance' reports during
    interpreter finalisation, AFTER pytest's summary line, so the summary would not be the last
    thing a reader (or CI) sees. Once pytest has written everything, the controller process exits
    directly with pytest's own status. xdist workers are left alone (they report to the controller)."""
    if hasattr(config, "workerinput"):
        return
    status = getattr(config, "_finops_exitstatus", None)
    if status is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
