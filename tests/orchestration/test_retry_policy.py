"""The retry_policy every FinOps task gets (finops.orchestration.retry): errors a retry cannot fix
end the task on its first try, through Airflow's own task runner (dag.test()); everything else
keeps the task's retries."""

from __future__ import annotations

import pytest

from finops.orchestration.retry import PERMANENT_ERRORS, permanent_reason


def _client_error(code: str) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": "m"}}, "DescribeInstances")


def test_errors_no_retry_fixes():
    from azure.core.exceptions import ClientAuthenticationError
    from azure.identity import CredentialUnavailableError
    from botocore.exceptions import NoCredentialsError
    from google.auth.exceptions import RefreshError

    from finops.exceptions import ConfigError
    from finops.http_client import HttpError
    from finops.prices.http import PriceSourceError

    refused = HttpError("GET https://api/x: HTTP 403", status=403)  # a 4xx: retryable stays False
    permanent = [
        ConfigError("sources.aws: bad"),
        refused,
        PriceSourceError("not JSON", status=200),
        RefreshError("invalid_grant", retryable=False),
        NoCredentialsError(),
        _client_error("AccessDenied"),
        _client_error("InvalidClientTokenId"),
        ClientAuthenticationError("AADSTS7000215: invalid client secret"),
        CredentialUnavailableError("no managed identity endpoint"),
    ]
    for exc in permanent:
        assert permanent_reason(exc), exc
        decision = PERMANENT_ERRORS.evaluate(exc, try_number=1, max_tries=4)
        assert decision.action.value == "fail" and decision.reason.startswith("not retried: ")


def test_errors_a_retry_may_fix_keep_the_retries():
    from google.auth.exceptions import RefreshError, TransportError

    from finops.http_client import RetryableHttpError

    throttled = RetryableHttpError("GET https://api/x: HTTP 429", status=429)
    throttled.retryable = True
    for exc in [
        throttled,
        RefreshError("backend 503", retryable=True),
        TransportError("reset"),
        _client_error("Throttling"),
        _client_error("ExpiredToken"),
        ConnectionError(),
        KeyError("bug"),
    ]:
        assert permanent_reason(exc) is None, exc
        assert PERMANENT_ERRORS.evaluate(exc, try_number=1, max_tries=4).action.value == "default"


PROBE = """
from datetime import UTC, datetime, timedelta

from airflow.sdk import dag, task

from finops.http_client import HttpError, RetryableHttpError
from finops.orchestration.defaults import default_args


@dag(dag_id="retry_policy_probe_{status}", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC),
     default_args=default_args(execution_timeout=timedelta(minutes=1), retries=2,
                               retry_delay=timedelta(seconds=0), exponential_backoff=False))
def probe():
    @task
    def call_api():
        cls = RetryableHttpError if {status} in (429, 503) else HttpError
        e = cls("GET https://api.example/x: HTTP {status} after 1 attempt(s)", status={status})
        e.retryable = {status} in (429, 503)
        raise e

    call_api()


probe()
"""


def _run_probe(tmp_path, monkeypatch, status: int):
    """A one-task DAG file built with the shared default_args, in a DAG bundle of its own, run by
    dag.test() (Airflow's own task runner evaluates the retry_policy)."""
    import json
    import os

    from airflow.dag_processing.dagbag import DagBag

    f = tmp_path / f"probe_{status}.py"
    f.write_text(PROBE.format(status=status))
    local = "airflow.dag_processing.bundles.local.LocalDagBundle"
    monkeypatch.setenv(
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST",
        json.dumps(
            [
                {"name": f"retry-probe-{status}", "classpath": local, "kwargs": {"path": str(tmp_path)}},
                {
                    "name": "dags-folder",
                    "classpath": local,
                    "kwargs": {"path": os.environ["AIRFLOW__CORE__DAGS_FOLDER"]},
                },
            ]
        ),
    )
    bag = DagBag(dag_folder=str(f))
    assert not bag.import_errors, bag.import_errors
    d = bag.get_dag(f"retry_policy_probe_{status}")
    assert d.get_task("call_api").retry_policy is PERMANENT_ERRORS  # from the shared default_args
    (ti,) = d.test().get_task_instances()
    return ti


@pytest.mark.usefixtures("airflow_db")
def test_a_refused_call_fails_on_its_first_try_through_the_task_runner(tmp_path, monkeypatch):
    ti = _run_probe(tmp_path, monkeypatch, 403)
    assert ti.state == "failed" and ti.try_number == 1  # retries=2 were not used


@pytest.mark.usefixtures("airflow_db")
def test_a_throttled_call_keeps_its_retries_through_the_task_runner(tmp_path, monkeypatch):
    ti = _run_probe(tmp_path, monkeypatch, 429)
    # dag.test() runs each retry at once (retry_delay 0): all 1 + 2 tries were made
    assert (ti.state, ti.try_number) == ("failed", 3)


def test_billing_tasks_carry_the_policy_and_the_dag_serializes():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_billing_aws.py"))
    assert not bag.import_errors, bag.import_errors
    billing_aws_dag = bag.dags["finops_billing_aws"]

    for t in billing_aws_dag.tasks:
        assert t.retry_policy is PERMANENT_ERRORS, t.task_id
    data = DagSerialization.to_dict(billing_aws_dag)
    tasks = {t["__var"]["task_id"]: t["__var"] for t in data["dag"]["tasks"]}
    assert all(
        t.get("has_retry_policy") or t.get("partial_kwargs", {}).get("has_retry_policy")
        for t in tasks.values()
    ), tasks
