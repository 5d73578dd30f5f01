"""airflow-finops: FinOps for ML-heavy cloud users, as an Airflow 3.3 plugin and DAGs."""

__version__ = "0.1.0"
