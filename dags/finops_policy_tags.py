"""Tag compliance, daily: snapshot every resource into tag_compliance, report / notify / mark.

An Airflow DAG file: wiring only (finops.orchestration.policy_dags; logic in finops.policies)."""

from finops.orchestration.policy_dags import build_policy_dag

dag = build_policy_dag(
    "tags",
    "finops_policy_tags",
    "30 5 * * *",
    "Daily tag-compliance snapshot and enforcement (dry-run unless enabled)",
)
