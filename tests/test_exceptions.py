"""One exception hierarchy: every error class the package defines derives from FinopsError, and
DAG tasks turn the errors no retry can fix (config, refused data) into AirflowFailException in
one place (finops.orchestration.failures), letting everything else retry."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

# Not errors: a control-flow signal the UI raises to send a browser to the login page.
NOT_ERRORS = {"finops.ui.auth.LoginRedirect"}


def _standalone_modules() -> set[str]:
    """The benchmark suite modules shipped alone to a GPU instance (no finops package there):
    they cannot import finops.exceptions."""
    from finops.gpubench import bootstrap

    mods = bootstrap.STANDALONE + bootstrap.SERVING_MODULES
    return {f"finops.gpubench.{m.removesuffix('.py')}" for m in mods if m != "__init__.py"}


def _error_classes() -> tuple[list[type[BaseException]], list[str]]:
    import finops

    found: list[type[BaseException]] = []
    broken: list[str] = []
    for info in pkgutil.walk_packages(finops.__path__, "finops."):
        if info.name.endswith(".__main__"):
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception as e:  # noqa: BLE001 - reported below: a module that does not import
            broken.append(f"{info.name}: {type(e).__name__}: {e}")
            continue
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found.append(obj)
    return found, broken


def test_every_error_class_derives_from_finops_error():
    from finops.exceptions import FinopsError

    classes, broken = _error_classes()
    assert not broken, broken
    assert len(classes) > 20  # the walk reached the package's error classes
    skip = _standalone_modules()
    outside = [
        f"{c.__module__}.{c.__qualname__}({', '.join(b.__name__ for b in c.__bases__)})"
        for c in classes
        if not issubclass(c, FinopsError)
        and f"{c.__module__}.{c.__qualname__}" not in NOT_ERRORS
        and c.__module__ not in skip
    ]
    assert not outside, "derive these from finops.exceptions (FinopsError or a branch):\n" + "\n".join(
        outside
    )


def test_config_errors_are_config_errors_and_still_value_errors():
    """A class named for a configuration problem sits on the ConfigError branch (so a task fails
    without retries), and stays a ValueError for the callers that catch one."""
    from finops.exceptions import ConfigError

    classes, _ = _error_classes()
    config_named = [c for c in classes if c.__name__.endswith(("ConfigError", "SettingsError", "SpecError"))]
    assert len(config_named) >= 4, config_named
    wrong = [c.__qualname__ for c in config_named if not issubclass(c, ConfigError)]
    assert not wrong, wrong
    assert issubclass(ConfigError, ValueError)


def test_the_branches_the_modules_reexport_are_the_same_classes():
    from finops import config, exceptions
    from finops.periods import PeriodError, parse_period
    from finops.warehouse import base

    assert config.ConfigError is exceptions.ConfigError
    assert base.WarehouseError is exceptions.WarehouseError
    # rows the warehouse refused are refused data (quarantined) and a warehouse error at once
    assert issubclass(base.DataRefused, exceptions.DataRefused)
    assert issubclass(base.DataRefused, base.WarehouseError)
    assert not base.DataRefused.retryable
    with pytest.raises(exceptions.ConfigError, match="YYYY-MM"):
        parse_period("2026-13")
    assert issubclass(PeriodError, ValueError)


def _run(exc: BaseException | None) -> str:
    from finops.orchestration.failures import fail_on_bad_input

    with fail_on_bad_input():
        if exc is not None:
            raise exc
        return "done"


def _make(module: str, name: str, message: str) -> BaseException:
    cls = getattr(importlib.import_module(module), name)
    return cls(message)


@pytest.mark.parametrize(
    ("module", "name", "message"),
    [
        ("finops.exceptions", "ConfigError", "prices.aws.regions: unknown region 'us-east-9'"),
        ("finops.periods", "PeriodError", "billing_period must look like YYYY-MM, got '2026-13'"),
        ("finops.warehouse.base", "DataRefused", "invalid byte sequence for encoding UTF8: 0x00"),
        ("finops.batch", "ConversionError", "missing required column(s): line_item_unblended_cost"),
        ("finops.policies.model", "PolicyError", "no policy named 'idel'"),
        ("finops.policies.tasks", "PolicyRunFailed", "gpu-idle: cap of 5 stops exceeded"),
        ("finops.gpubench.settings", "BenchSettingsError", "benchmarks.targets: no target 'aws/x'"),
    ],
)
def test_errors_no_retry_fixes_fail_the_task_at_once(module, name, message):
    from airflow.sdk.exceptions import AirflowFailException

    exc = _make(module, name, message)
    with pytest.raises(AirflowFailException) as got:
        _run(exc)
    assert str(got.value) == message  # the message names the key / the data, unchanged
    assert got.value.__cause__ is None and got.value.__suppress_context__


@pytest.mark.parametrize(
    ("module", "name", "message"),
    [
        ("finops.gpubench.launchers.base", "LaunchError", "InsufficientInstanceCapacity"),
        ("finops.exceptions", "WarehouseError", "could not obtain lock on relation focus_costs"),
        ("finops.sources", "DeliveryError", "export run 20261101: manifest lists missing blob(s)"),
        ("builtins", "RuntimeError", "connection reset by peer"),
        ("builtins", "KeyError", "billing_period"),
    ],
)
def test_other_errors_propagate_unchanged_so_the_task_retries(module, name, message):
    exc = _make(module, name, message)
    with pytest.raises(type(exc)) as got:
        _run(exc)
    assert got.value is exc


@pytest.fixture
def api():
    """A local HTTP server answering each path with that status code (/503, /400)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b'{"message": "no"}'
            self.send_response(int(self.path.strip("/")))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_http_errors_retry_on_5xx_and_fail_on_a_refusal(api):
    """The HTTP client marks each error: a 503 may pass on the task's next try, a 400 will not."""
    from airflow.sdk.exceptions import AirflowFailException

    from finops.exceptions import CloudActionError
    from finops.http_client import HttpClient, RetryableHttpError, RetrySettings

    client = HttpClient(api, settings=RetrySettings(max_attempts=1))

    def call(path: str) -> None:
        from finops.orchestration.failures import fail_on_bad_input

        with fail_on_bad_input():
            client.get(path)

    with pytest.raises(RetryableHttpError) as busy:
        call("/503")
    assert isinstance(busy.value, CloudActionError) and busy.value.status == 503
    with pytest.raises(AirflowFailException, match="400"):
        call("/400")


def test_no_error_passes_through():
    assert _run(None) == "done"


DAG_FILE = """
from datetime import UTC, datetime, timedelta

from airflow.sdk import dag, get_current_context, task

from finops.exceptions import ConfigError
from finops.gpubench.launchers.base import LaunchError
from finops.orchestration.failures import fail_on_bad_input


@dag(dag_id="finops_test_fail_on_bad_input", start_date=datetime(2026, 1, 1, tzinfo=UTC), schedule=None,
     default_args={"retries": 2, "retry_delay": timedelta(seconds=0)})
def probe():
    @task
    def bad_config() -> None:
        with fail_on_bad_input():
            raise ConfigError("anomaly.lookback_days: must be at least 7")

    @task
    def flaky() -> int:
        try_number = get_current_context()["ti"].try_number
        with fail_on_bad_input():
            if try_number < 2:
                raise LaunchError("InsufficientInstanceCapacity in us-east-1a")
        return try_number

    bad_config()
    flaky()


probe()
"""


def test_under_airflow_config_errors_fail_on_the_first_try_and_others_retry(airflow_db, tmp_path):
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    (tmp_path / "fail_probe.py").write_text(DAG_FILE)
    bag = DagBag(dag_folder=str(tmp_path))
    assert not bag.import_errors, bag.import_errors
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)  # dag.test() only runs serialized DAGs of a bundle
    dr = bag.get_dag("finops_test_fail_on_bad_input").test()
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert str(tis["bad_config"].state) == "failed" and tis["bad_config"].try_number == 1
    assert str(tis["flaky"].state) == "success" and tis["flaky"].try_number == 2
