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
