"""Idle-GPU policies, hourly: detect -> mark + notify owner -> after grace re-check -> stop.

An Airflow DAG file: wiring only (finops.orchestration.policy_dags; logic in finops.policies)."""

from datetime import timedelta

from finops.orchestration.policy_dags import build_policy_dag

dag = build_policy_dag(
    "idle",
    "finops_policy_idle",
    "7 * * * *",
    "Hourly idle-GPU detection, mark-for-stop with grace period, capped and audited",
    execution_timeout=timedelta(minutes=45),
)
