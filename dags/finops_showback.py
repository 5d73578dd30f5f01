"""Airflow DAG finops_showback: allocate focus_costs to teams (showback_daily,
chargeback_monthly, GPU view) whenever billing data lands, per billing period; then announce
finops://showback, which schedules the team anomaly monitors (finops_anomalies_teams)."""

from finops.orchestration.showback_dag import build_showback_dag

dag = build_showback_dag(__doc__)
