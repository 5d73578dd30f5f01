"""Every finops DAG alerts when a task fails for good (a real dag.test() failure reaching a sink:
tests/policies/test_dags.py), and the alert never carries a secret from the exception text."""

from __future__ import annotations

from types import SimpleNamespace

from finops.alerts.task_failure import failure_event, task_failed


def test_every_task_of_every_dag_alerts_on_failure():
    from airflow.models import DagBag

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags"))
    assert not bag.import_errors and len(bag.dags) >= 14
    missing = [
        f"{d.dag_id}.{t.task_id}"
        for d in bag.dags.values()
        for t in d.tasks
        if task_failed
        not in (t.on_failure_callback if isinstance(t.on_failure_callback, list) else [t.on_failure_callback])
    ]
    assert missing == []


def test_the_alert_carries_no_credentials_and_a_broken_sink_does_not_raise():
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=3, try_number=4)
    exc = ConnectionError("POST https://svc:hunter2@api.example.com/v1 failed; " + "x" * 5000)
    ev = failure_event({"ti": ti, "exception": exc})
    assert (
        "hunter2" not in ev.summary and "https://***@api.example.com" in ev.summary and len(ev.summary) <= 600
    )
    assert ev.facts == {
        "dag_id": "d",
        "task_id": "t",
        "run_id": "r",
        "map_index": 3,
        "try_number": 4,
        "failed_map_indexes": "1 or more (count unavailable)",
    }
    assert ev.dedup_key == "task_failed:d:t:r"  # one per run + task, whichever map index
    task_failed({})  # no task instance at all: logged, never raised
