"""Glue between DAGs and the package: what a task does, kept free of Airflow imports where
possible so it is testable with plain calls; `*_dag.py` modules build the DAG objects."""
