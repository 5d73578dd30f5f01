"""Airflow DAG finops_billing_azure: Azure Cost Management exports in Blob Storage (newest month-to-date run wins)
-> FOCUS 1.2 warehouse. Same shape, Params and Asset outlet as every billing DAG (finops.orchestration.billing_dags)."""

from finops.orchestration.billing_dags import build_billing_dag

dag = build_billing_dag("azure", schedule="30 6 * * *")
