"""The showback and report DAGs run end to end with dag.test() on the embedded warehouse."""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

from tests.allocation.focus_data import focus_row, insert_focus

REPO = Path(__file__).resolve().parents[2]


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
    assert bag.import_errors == {}
    return bag.dags[dag_id]


def test_showback_and_report_dags(airflow_db, duckdb_wh, finops_home):
    insert_focus(duckdb_wh, [
        focus_row("2026-10-01", "10.10", tags={"team": "ml-research"}),
        focus_row("2026-10-02", "5.05", sub_account_id="111111111111"),  # rules[0] of allocation.yaml
        focus_row("2026-10-02", "1.01"),
    ])
    duckdb_wh.close()  # the DAG's tasks open the warehouse themselves

    sb = _dag("finops_showback")
    run = sb.test(run_conf={"billing_period": "2026-10"})
    assert run.state == "success"

    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(finops_home / "warehouse.duckdb") as wh:
        got = dict(wh.query("SELECT team, total_cost FROM chargeback_monthly WHERE cost_view = 'billed'"))
    assert got == {"ml-research": D("15.15"), "unallocated": D("1.01")}

    rep = _dag("finops_report_monthly")
    run = rep.test(run_conf={"billing_period": "2026-10", "send_email": False, "cost_view": "billed"})
    assert run.state == "success"
    assert (finops_home / "reports" / "2026-10" / "ml-research.html").exists()
    assert (finops_home / "reports" / "2026-10" / "unallocated.csv").exists()


def test_dags_are_scheduled_on_the_billing_asset():
    for dag_id in ("finops_showback", "finops_anomalies"):
        dag = _dag(dag_id)
        uris = [a.uri.rstrip("/") for a in dag.timetable.asset_condition.objects]
        assert uris == ["finops://focus_costs"], (dag_id, uris)
