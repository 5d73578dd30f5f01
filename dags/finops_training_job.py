"""Airflow DAG finops_training_job: trigger by hand with the Params form to run an ad-hoc
training job where it is cheapest (spot with checkpoints, fallback to on-demand or a smaller
GPU under AMP, budget cap). Dry-run by default: the plan table, nothing launched."""

from finops.orchestration.training_jobs import build_training_job_dag

dag = build_training_job_dag(doc_md=__doc__)
