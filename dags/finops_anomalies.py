"""Airflow DAG finops_anomalies: cost anomaly detection on the billing data itself (provider,
service, account and tag monitors) whenever it lands; new anomalies alert once via the routes.
Team monitors read the showback tables: finops_anomalies_teams runs them after finops_showback."""

from finops.orchestration.anomaly_dags import build_anomaly_dag

dag = build_anomaly_dag(
    "finops_anomalies",
    "focus_costs",
    "Detect cost anomalies per provider / service / account / tag (seasonal median + MAD, $ floor and % "
    "threshold) and alert once.",
    __doc__,
)
