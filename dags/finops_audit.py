"""Manual audit: evaluate policies (dry-run by default) and produce the violations report.

An Airflow DAG file: wiring only (finops.orchestration.policy_dags; logic in finops.policies)."""

from finops.orchestration.policy_dags import build_audit_dag

dag = build_audit_dag()
