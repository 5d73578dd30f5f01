"""The showback DAG runs end to end with dag.test() on the embedded warehouse; the others parse
with their Params forms and asset schedules."""

from __future__ import annotations

from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.fixtures.focus_data import focus_row, insert_focus

REPO = Path(__file__).resolve().parents[2]


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
    assert bag.import_errors == {}
    return bag.dags[dag_id]


@pytest.mark.slow
def test_showback_dag_runs_end_to_end(airflow_db, duckdb_wh, finops_home):
    insert_focus(
        duckdb_wh,
        [
            focus_row("2026-10-01", "10.10", tags={"team": "ml-research"}),
            focus_row("2026-10-02", "5.05", sub_account_id="111111111111"),  # rules[0] of allocation.yaml
            focus_row("2026-10-02", "1.01"),
        ],
    )
    duckdb_wh.close()  # the DAG's tasks open the warehouse themselves

    sb = _dag("finops_showback")
    run = sb.test(run_conf={"billing_period": "2026-10"})
    assert run.state == "success"

    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(finops_home / "warehouse.duckdb") as wh:
        got = dict(wh.query("SELECT team, total_cost FROM chargeback_monthly WHERE cost_view = 'billed'"))
    assert got == {"ml-research": D("15.15"), "unallocated": D("1.01")}


@pytest.mark.slow
def test_report_dag_emails_once_per_figures_and_again_on_request(
    airflow_db, duckdb_wh, finops_home, alert_smtp, monkeypatch, tmp_path
):
    """dag.test() of finops_report_monthly: saved files, one e-mail per team route; a re-run of the
    same month sends nothing (alert_state ledger), and its "Send again" Param sends once more."""
    from finops.allocation.rules import parse_rules
    from finops.allocation.store import run_showback

    cfg = tmp_path / "finops.yaml"
    cfg.write_text(
        "alerts:\n  routes:\n"
        f"    - {{team: '*', email_conn_id: {alert_smtp.conn_id}, email_to: [finops@example.com]}}\n"
    )
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    insert_focus(
        duckdb_wh,
        [focus_row("2026-10-01", "10.10", tags={"team": "ml-research"}), focus_row("2026-10-02", "1.01")],
    )
    run_showback(duckdb_wh, "2026-10", parse_rules({}))
    duckdb_wh.close()  # the DAG's task opens the warehouse itself

    dag = _dag("finops_report_monthly")
    conf = {"billing_period": "2026-10", "cost_view": "billed"}
    assert dag.test(run_conf=conf).state == "success"
    first = len(alert_smtp.envelopes)
    assert first == 2  # ml-research and unallocated, each to the catch-all route
    assert sorted((finops_home / "reports" / "2026-10").glob("*.csv"))
    assert dag.test(run_conf=conf).state == "success"
    assert len(alert_smtp.envelopes) == first  # same figures: nothing sent twice
    assert dag.test(run_conf={**conf, "resend": True}).state == "success"
    assert len(alert_smtp.envelopes) == 2 * first


def test_report_dag_params_form():
    dag = _dag("finops_report_monthly")
    assert dag.params.get_param("cost_view").schema["enum"] == ["amortised", "billed"]
    assert dag.params.get_param("billing_period").schema["pattern"]
    assert dag.params.get_param("resend").value is False
    assert [t.task_id for t in dag.tasks] == ["report"]


def test_dags_are_scheduled_on_the_billing_asset():
    for dag_id in ("finops_showback", "finops_anomalies"):
        dag = _dag(dag_id)
        uris = [a.uri.rstrip("/") for a in dag.timetable.asset_condition.objects]
        assert uris == ["finops://focus_costs"], (dag_id, uris)
