"""finops_billing_gcp / _azure / _lambda end to end through Airflow's own dag.test(), against
the same local emulators as the demo (bqemulator, Azurite, the local Lambda Cloud API), seeded
by the demo's own seeders, into DuckDB. BilledCost per period equals the generators' totals to
the cent (and load_log's raw total); a second run changes nothing."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
import yaml

pytestmark = pytest.mark.slow

PERIODS = ["2026-09", "2026-10"]
CENT = Decimal("0.01")


def _config(tmp_path, monkeypatch, sources: dict) -> None:
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump({"sources": sources}))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))


def _run(provider: str) -> str:
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / f"finops_billing_{provider}.py"))
    assert not bag.import_errors, bag.import_errors
    dr = bag.get_dag(f"finops_billing_{provider}").test(run_conf={"billing_period": ",".join(PERIODS)})
    return str(dr.state)


def _warehouse():
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    return DuckDBWarehouse(warehouse_path())


def _snapshot(provider: str, source: str) -> tuple:
    """Per-period totals and every row (sorted): what 'changes nothing' means."""
    wh = _warehouse()
    try:
        totals = wh.query(
            "SELECT x_billing_period, count(*), sum(billed_cost), sum(effective_cost) FROM focus_costs "
            "WHERE x_provider = ? GROUP BY 1 ORDER BY 1",
            [provider],
        )
        rows = wh.query_arrow("SELECT * FROM focus_costs").to_pylist()
        rows.sort(key=lambda r: tuple(str(v) for v in r.values()))
        log = wh.query(
            "SELECT billing_period, status, raw_billed_total, focus_billed_total FROM load_log "
            "WHERE source = ? ORDER BY finished_at",
            [source],
        )
        return totals, rows, log
    finally:
        wh.close()


def _two_runs(provider: str, source: str, expected: dict[str, Decimal]) -> list:
    assert _run(provider) == "success"
    totals, rows, log = _snapshot(provider, source)
    assert [p for p, *_ in totals] == PERIODS
    for period, n, billed, _eff in totals:
        assert n > 0
        assert Decimal(billed).quantize(CENT) == expected[period].quantize(CENT), (provider, period)
    assert sorted((p, st) for p, st, _r, _f in log) == [(p, "loaded") for p in PERIODS]
    for period, _st, raw, focus in log:  # the spine's own reconciliation, recorded
        assert raw == focus and Decimal(focus).quantize(CENT) == expected[period].quantize(CENT)

    assert _run(provider) == "success"  # same deliveries again
    totals2, rows2, log2 = _snapshot(provider, source)
    assert (totals2, rows2) == (totals, rows)
    assert sorted(st for _p, st, _r, _f in log2[len(log) :]) == ["unchanged"] * len(PERIODS)
    return totals


def test_gcp_dag_loads_and_is_idempotent(
    airflow_db, finops_home, tmp_path, monkeypatch, gcp_bq_server, gcp_conn
):
    from finops.demo.run import seed_gcp

    table = f"gcp_billing_export_resource_v1_{uuid.uuid4().hex[:8]}"
    _config(
        tmp_path,
        monkeypatch,
        {
            "gcp": [
                {
                    "name": "gcp-billing",
                    "conn_id": gcp_conn,
                    "project": "billing-proj",
                    "dataset": "billing",
                    "table": table,
                }
            ]
        },
    )
    expected = seed_gcp(gcp_bq_server, PERIODS, days=1)
    _two_runs("gcp", "gcp-billing", expected)


def test_azure_dag_takes_newest_run_and_is_idempotent(
    airflow_db, finops_home, tmp_path, monkeypatch, az_blob_endpoint, az_conn
):
    from azure.storage.blob import BlobServiceClient

    from finops.demo.run import seed_azure

    container = f"finops-{uuid.uuid4().hex[:8]}"
    _config(
        tmp_path,
        monkeypatch,
        {
            "azure": [
                {
                    "name": "azure-ea",
                    "conn_id": az_conn,
                    "container": container,
                    "prefix": "cost-exports/acme-ea-amortized",
                    "format": "amortized",
                    "agreement": "ea",
                }
            ]
        },
    )
    expected = seed_azure(
        az_blob_endpoint, PERIODS, days=2
    )  # two month-to-date runs per month (1 and 2 days)
    try:
        totals = _two_runs("azure", "azure-ea", expected)
        # only the newer, 2-day run counts: 2 days x the generator's daily rows, not 1 + 2
        from finops.demo import azure_generator as gen

        assert [n for _p, n, _b, _e in totals] == [
            len(gen.generate(period=p, layout="ea", kind="amortized", days=2, seed=11 + i).rows)
            for i, p in enumerate(PERIODS)
        ]
    finally:
        BlobServiceClient.from_connection_string(az_blob_endpoint).delete_container(container)


def test_lambda_dag_bills_polled_lifetimes_and_is_idempotent(
    airflow_db, finops_home, tmp_path, monkeypatch, lam_api
):
    from finops.demo.run import seed_lambda

    _config(
        tmp_path,
        monkeypatch,
        {"lambda": [{"name": "lambda-team", "conn_id": "lambda_cloud_default", "account_name": "acme-ml"}]},
    )
    expected = seed_lambda(lam_api, PERIODS)
    # by hand: H100 02:30-10:00 = 7.5 h x $23.92; A10 01:30-16:00 = 14.5 h x $0.75; A100 11:30-13:30 = 2 h x $1.29
    assert set(expected.values()) == {Decimal("179.40") + Decimal("10.875") + Decimal("2.58")}
    calls_before = len(lam_api.calls)
    _two_runs("lambda", "lambda-team", expected)
    assert lam_api.calls[calls_before:].count("/api/v1/instances") >= 2  # the DAG polled the API itself
    wh = _warehouse()
    try:  # the instance running "now" was recorded by the DAG's own polls, but not billed in closed months
        assert wh.query("SELECT name, ended_at FROM lambda_instance_lifetimes WHERE name = 'dev-box'") == [
            ("dev-box", None)
        ]
    finally:
        wh.close()
