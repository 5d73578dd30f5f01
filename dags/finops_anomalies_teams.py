"""Airflow DAG finops_anomalies_teams: cost anomaly detection per team, on the showback tables,
each time finops_showback has allocated a billing load (its finops://showback asset), so teams
are scored on the showback of that load, never on the previous or a half-rewritten one."""

from finops.orchestration.anomaly_dags import build_anomaly_dag

dag = build_anomaly_dag(
    "finops_anomalies_teams",
    "showback",
    "Detect cost anomalies per team on the fresh showback (seasonal median + MAD, $ floor and % threshold) "
    "and alert once.",
    __doc__,
)
