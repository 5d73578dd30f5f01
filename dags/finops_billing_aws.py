"""AWS billing (CUR 2.0 / legacy CUR / AWS FOCUS export in S3) -> FOCUS 1.2 warehouse, daily."""

from finops.orchestration.billing_dag import build_billing_dag

dag = build_billing_dag("aws", schedule="15 6 * * *")
