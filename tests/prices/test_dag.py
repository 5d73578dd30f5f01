"""finops_prices end to end through Airflow's dag.test(): Azure, GCP and Lambda emulators on
loopback -> DuckDB warehouse; a re-run adds nothing; a provider Param narrows the run.
One test on purpose: each DagBag parse + dag.test() costs seconds of Airflow overhead."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import yaml


@pytest.fixture
def prices_config(
    tmp_path,
    monkeypatch,
    finops_home,
    airflow_db,
    prices_azure,
    prices_gcp,
    prices_lambda,
    prices_lambda_conn,
):
    u = urlsplit(prices_gcp.base)
    monkeypatch.setenv(
        "AIRFLOW_CONN_FINOPS_GCP_PRICES",
        json.dumps({"conn_type": "http", "host": u.hostname, "port": u.port, "schema": "http"}),
    )
    cfg = {
        "prices": {
            "aws": {"enabled": False},
            "azure": {"base_url": prices_azure.base + "/api/retail/prices", "regions": ["eastus", "westus2"]},
            "gcp": {"conn_id": "finops_gcp_prices", "regions": ["us-central1", "us-east4"]},
            "lambda": {"conn_id": prices_lambda_conn},
            "http": {"backoff_base_s": 0.01},
        }
    }
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    return path


def _dag():
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_prices.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag("finops_prices")


def _counts():
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(warehouse_path()) as wh:
        return {
            t: wh.query(f"SELECT provider, count(*) FROM {t} GROUP BY 1 ORDER BY 1")
            for t in ("spot_prices", "ondemand_prices", "instance_catalog", "price_fetch_log")
        }


def test_dag_runs_end_to_end_and_reruns_add_nothing(prices_config, prices_lambda):
    dag = _dag()
    assert dag.params["provider"] == "all"
    assert dag.params.get_param("provider").schema["enum"] == ["all", "aws", "azure", "gcp", "lambda"]
    assert set(dag.task_ids) == {
        f"{k}_{p}" for k in ("plan", "fetch") for p in ("aws", "azure", "gcp", "lambda")
    } | {"summary"}
    assert [o.name for o in dag.get_task("summary").outlets] == ["finops://prices"]
    assert dag.get_task("fetch_aws").retry_exponential_backoff and dag.get_task("fetch_aws").retries == 3

    for t in dag.tasks:  # a failure must fail the test now, not wait out minutes of retry backoff
        t.retries = 0
    prices_lambda.fail(429, retry_after="0")  # absorbed by the client, the task still succeeds
    assert str(dag.test(run_conf={"provider": "all"}).state) == "success"
    first = _counts()
    # GCP, 2 regions: 8 g2 + 5 a2-highgpu spot shapes each (no spot A100 80GB / H100 SKU in the fixture);
    # on demand adds 4 a2-ultragpu per region and 4 a3-highgpu in us-central1 (the only H100 region)
    assert first["spot_prices"] == [("azure", 6), ("gcp", 26)]
    assert first["ondemand_prices"] == [("azure", 6), ("gcp", 38), ("lambda", 6)]
    assert {p for p, _ in first["instance_catalog"]} == {"azure", "gcp", "lambda"}

    assert str(dag.test(run_conf={"provider": "lambda"}).state) == "success"
    after = _counts()
    assert after["spot_prices"] == first["spot_prices"]
    assert after["ondemand_prices"] == first["ondemand_prices"]
    fetches = dict(after["price_fetch_log"])
    assert fetches["lambda"] == 2 and fetches["azure"] == 2  # the second run touched Lambda only
