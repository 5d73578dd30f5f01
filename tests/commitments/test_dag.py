"""finops_commitments end to end with dag.test() on the embedded warehouse: the tables are
written, a commitment ending in 5 days alerts its route once (the next run sends nothing) even
with the Azure end-date API refusing the call, and
a "what if we buy X" run stores priced advice and buys nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.fixtures.commitments import SP, load_commitment_rows

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_commitments_dag(
    airflow_db, duckdb_wh, finops_home, alert_smtp, commitment_apis, monkeypatch, tmp_path
):
    from airflow.dag_processing.dagbag import DagBag

    now = datetime.now(UTC)
    end = (now + timedelta(days=5)).date()
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(json.dumps({
        "alerts": {"routes": [{"email_conn_id": alert_smtp.conn_id, "email_to": ["finops@example.com"]}]},
        "allocation": {"teams": [{"name": "ml"}], "rules": [{"team": "ml", "match": {"accounts": ["111", "222"]}}]},
        "commitments": {"history_days": 400, "advice": {"lookback_days": 400},
                        "inventory": [{"provider": "aws", "id": SP, "end": end.isoformat(), "description": "SP"}],
                        "end_date_sources": [{"provider": "azure", "conn_id": "commitments_api"}]},
    }))  # fmt: skip
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    commitment_apis.refuse = True  # the Azure API refuses: recorded, the declared end date stands
    load_commitment_rows(duckdb_wh)  # October 2026
    duckdb_wh.close()  # the DAG's tasks open the warehouse themselves

    bag = DagBag(dag_folder=str(REPO / "dags" / "finops_commitments.py"))
    assert bag.import_errors == {}
    dag = bag.dags["finops_commitments"]
    assert dag.test().state == "success"
    subjects = [str(m["Subject"]) for m in alert_smtp.messages]
    assert len(subjects) == 1 and "Commitment ends in 5 days" in subjects[0]
    assert commitment_apis.requests == [
        "/providers/Microsoft.Capacity/reservationOrders?api-version=2022-11-01"
    ]
    # a "what if we buy 0.05 $/h of a Savings Plan" run; its expiry task re-checks: nothing new
    conf = {"what_if_product": "aws/savings_plan", "what_if_hourly": "0.05"}
    assert dag.test(run_conf=conf).state == "success"
    assert len(alert_smtp.messages) == 1  # the 7-day alert went once

    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(finops_home / "warehouse.duckdb") as wh:
        got = wh.query("SELECT team, SUM(covered_list) FROM commitment_coverage GROUP BY team ORDER BY team")
        assert got == [("data", Decimal(5)), ("ml", Decimal(42))]  # tag team=data; the rest by account
        rows = wh.query(
            "SELECT product, term_years, payment, commitment_hourly FROM commitment_advice WHERE what_if"
        )
        assert len(rows) == 6 and {r[3] for r in rows} == {Decimal("0.0500000000")}
