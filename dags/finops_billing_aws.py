"""Airflow DAG finops_billing_aws: AWS billing (CUR 2.0 / legacy CUR / AWS FOCUS export in S3)
-> FOCUS 1.2 warehouse, daily. The shape is shared by every provider (finops.orchestration.billing_dags)."""

from finops.orchestration.billing_dags import build_billing_dag

dag = build_billing_dag("aws", schedule="15 6 * * *")
