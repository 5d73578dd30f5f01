"""Airflow DAG finops_prices: spot and on-demand price history, the cross-cloud GPU instance
catalog and AWS spot placement scores, every 6 hours (shape in finops.orchestration.prices_dag)."""

from finops.orchestration.prices_dag import build_prices_dag

dag = build_prices_dag()
