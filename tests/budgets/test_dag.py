"""finops_budgets end to end with dag.test() on the embedded warehouse: forecasts written, a
budget over its forecast alerts its team's e-mail route once, and a re-run sends nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.fixtures.budgets import seed_showback

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_budgets_dag_forecasts_and_alerts_once(
    airflow_db, duckdb_wh, finops_home, alert_smtp, monkeypatch, tmp_path
):
    from airflow.dag_processing.dagbag import DagBag

    cfg = tmp_path / "finops.yaml"
    cfg.write_text(
        "alerts:\n  routes:\n"
        f"    - {{team: ml, email_conn_id: {alert_smtp.conn_id}, email_to: [ml-leads@example.com]}}\n"
        "budgets:\n  items:\n    - {name: ml-gpu, team: ml, kind: gpu, amount: 50}\n"
    )
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    today = datetime.now(UTC).date()
    seed_showback(duckdb_wh, "ml", today - timedelta(days=90), 90, Decimal("100.00"))  # through yesterday
    duckdb_wh.close()  # the DAG's tasks open the warehouse themselves

    bag = DagBag(dag_folder=str(REPO / "dags" / "finops_budgets.py"))
    assert bag.import_errors == {}
    dag = bag.dags["finops_budgets"]
    assert dag.test().state == "success"
    subjects = sorted(str(m["Subject"]) for m in alert_smtp.messages)
    assert len(subjects) >= 1 and all("Budget ml-gpu" in s for s in subjects)
    assert all(rcpt == ["ml-leads@example.com"] for _, rcpt in alert_smtp.envelopes)
    assert dag.test().state == "success"
    assert sorted(str(m["Subject"]) for m in alert_smtp.messages) == subjects  # nothing new

    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(finops_home / "warehouse.duckdb") as wh:
        assert wh.query(
            "SELECT cost_view FROM cost_forecasts WHERE dimension = 'team' AND series_key = 'ml'"
        ) == [("amortised",)]
        assert wh.query("SELECT COUNT(*) FROM budget_alerts WHERE alerted_at IS NULL")[0][0] == 0
