"""Airflow DAG finops_billing_gcp: GCP detailed billing export in BigQuery (rolling reload window for late rows)
-> FOCUS 1.2 warehouse. Same shape, Params and Asset outlet as every billing DAG (finops.orchestration.billing_dags)."""

from finops.orchestration.billing_dags import build_billing_dag

dag = build_billing_dag("gcp", schedule="45 6 * * *")
