"""One task-failure alert per DAG run + task, not one per failed map index: a mapped load over
12 billing periods that all fail on expired credentials sent 12 identical critical alerts. The
one sent names how many map indexes had failed when it went out."""

from __future__ import annotations

DAG_FILE = """
from datetime import UTC, datetime

from airflow.sdk import dag, task

from finops.alerts.task_failure import task_failed


@dag(dag_id="finops_test_mapped_failures", start_date=datetime(2026, 1, 1, tzinfo=UTC), schedule=None,
     default_args={"on_failure_callback": task_failed, "retries": 0})
def mapped():
    @task
    def load(i: int) -> int:
        if i != 1:
            raise PermissionError(f"partition {i}: ExpiredToken")
        return i

    load.expand(i=[0, 1, 2, 3])


mapped()
"""


def test_mapped_failures_alert_once_per_run_and_task(airflow_db, duckdb_wh, tmp_path):
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    from finops.alerts.dedup import AlertLedger
    from finops.alerts.events import register_sink

    got: list = []
    register_sink(got.append)
    (tmp_path / "mapped_failures.py").write_text(DAG_FILE)
    bag = DagBag(dag_folder=str(tmp_path))
    assert not bag.import_errors, bag.import_errors
    from airflow.dag_processing.bundles.manager import DagBundlesManager

    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)  # dag.test() only runs serialized DAGs of a bundle
    bag.get_dag("finops_test_mapped_failures").test()
    failed = [e for e in got if e.kind == "task_failed"]
    assert len(failed) == 3  # every failing index still calls back ...
    assert len({e.dedup_key for e in failed}) == 1  # ... under one key: the ledger delivers it once
    sent: list[str] = []
    ledger = AlertLedger(duckdb_wh)
    for e in failed:
        ledger.deliver_once(e.dedup_key, "slack", lambda e=e: sent.append(e.facts["failed_map_indexes"]))
    assert len(sent) == 1 and sent[0].startswith("1 of 4"), sent
    assert [e.facts["failed_map_indexes"].split(" ")[0] for e in failed] == ["1", "2", "3"]
