"""AlertRouteNotifier: the alert routes as an Airflow BaseNotifier. A real dag.test() failure
calls it from on_failure_callback with its template rendered against the run, and the event
reaches a registered sink; a DAG-level callback and the async (triggerer) path alert too."""

from __future__ import annotations

import asyncio

import pytest
from airflow.sdk import BaseNotifier

from finops.alerts.notifier import AlertRouteNotifier

DAG_FILE = """
from datetime import UTC, datetime

from airflow.sdk import dag, task

from finops.alerts.notifier import AlertRouteNotifier


@dag(dag_id="finops_notifier_probe", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC),
     default_args={"retries": 0,
                   "on_failure_callback": AlertRouteNotifier(team="{{ dag.dag_id }}-owners", severity="warning")})
def probe():
    @task
    def boom() -> None:
        raise ValueError("export s3://bucket/cur/2026-05 not found")

    boom()


probe()
"""


@pytest.mark.slow  # a real dag.test() run: 10-40 s on a shared 2-core machine
def test_a_failed_task_alerts_through_the_notifier(airflow_db, pol_alerts, tmp_path):
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    (tmp_path / "notifier_probe.py").write_text(DAG_FILE)
    bag = DagBag(dag_folder=str(tmp_path))
    assert not bag.import_errors, bag.import_errors
    probe = bag.get_dag("finops_notifier_probe")
    assert isinstance(probe.get_task("boom").on_failure_callback[0], BaseNotifier)
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)  # dag.test() only runs serialized DAGs of a bundle
    dr = probe.test()
    assert str(dr.state) == "failed"
    [ev] = [e for e in pol_alerts if e.kind == "task_failed"]
    assert ev.title == "Airflow task failed: finops_notifier_probe.boom"
    assert ev.team == "finops_notifier_probe-owners"  # the template, rendered against the run
    assert ev.severity == "warning"
    assert ev.summary == "ValueError: export s3://bucket/cur/2026-05 not found"
    assert ev.facts["run_id"] == dr.run_id
    assert ev.dedup_key == f"task_failed:finops_notifier_probe:boom:{dr.run_id}"


def test_dag_level_and_async_callbacks_alert(pol_alerts):
    class Run:
        dag_id, run_id = "finops_showback", "scheduled__2026-05-01"

    AlertRouteNotifier()({"dag_run": Run(), "reason": "task_failure"})
    asyncio.run(AlertRouteNotifier(title="billing not landed by 09:00").async_notify({"dag_run": Run()}))
    assert [(e.kind, e.title, e.summary, e.dedup_key) for e in pol_alerts] == [
        (
            "dag_run_failed",
            "Airflow DAG run failed: finops_showback",
            "task_failure",
            "dag_run_failed:finops_showback:scheduled__2026-05-01",
        ),
        (
            "dag_run_failed",
            "billing not landed by 09:00",
            "see the DAG run in the Airflow UI",
            "dag_run_failed:finops_showback:scheduled__2026-05-01",
        ),
    ]


def test_a_broken_route_never_raises_from_the_callback(pol_alerts):
    from finops.alerts.events import register_sink

    def broken(ev) -> None:
        raise ConnectionError("smtp down")

    register_sink(broken)
    AlertRouteNotifier()({})  # no task instance, no DAG run, a failing sink: logged, not raised
    assert [e.kind for e in pol_alerts] == ["dag_run_failed"]
