"""Airflow DAG finops_billing_lambda: Lambda Cloud: polls instances hourly and derives hourly cost from lifetimes x price
-> FOCUS 1.2 warehouse. Same shape, Params and Asset outlet as every billing DAG (finops.orchestration.billing_dags)."""

from finops.orchestration.billing_dags import build_billing_dag

dag = build_billing_dag("lambda", schedule="5 * * * *")
