"""finops_prices: a Param no retry can fix fails the run at once."""

from __future__ import annotations

import yaml


def test_a_bad_region_fails_the_plan_without_retries(airflow_db, finops_home, tmp_path, monkeypatch):
    """provider=azure with a region name Azure cannot have: plan_azure raised ValueError and was
    retried three times with backoff (1 + 2 + 4 min) before the run failed."""
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump({"prices": {"aws": {"enabled": False}}}))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_prices.py"))
    assert not bag.import_errors, bag.import_errors
    dr = bag.get_dag("finops_prices").test(run_conf={"provider": "azure", "regions": ["east us"]})
    tries = {ti.task_id: (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}
    assert str(dr.state) == "failed"
    assert tries["plan_azure"] == ("failed", 1)
    assert tries["summary"][0] == "upstream_failed"


def _prices_events(dr) -> list[str]:
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as s:
        return [e.asset.uri for e in s.query(AssetEvent).filter(AssetEvent.source_run_id == dr.run_id)]


def test_a_run_that_fetched_nothing_announces_nothing(airflow_db, finops_home, tmp_path, monkeypatch):
    """provider=azure while prices.azure is disabled fetched nothing, succeeded and announced
    finops://prices; now it fails naming the setting. A run with every provider disabled
    announces nothing either."""
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    off = {p: {"enabled": False} for p in ("aws", "azure", "gcp", "lambda")}
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump({"prices": off}))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_prices.py"))
    dag = bag.get_dag("finops_prices")
    dr = dag.test(run_conf={"provider": "azure"})
    tries = {ti.task_id: (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}
    assert str(dr.state) == "failed" and tries["plan_azure"] == ("failed", 1), tries
    assert _prices_events(dr) == []
    dr = dag.test(run_conf={"provider": "all"})
    assert str(dr.state) == "success"
    assert _prices_events(dr) == []
