"""Airflow DAGs finops_training_job and finops_training_job_reaper. finops_training_job: trigger
by hand with the Params form to run an ad-hoc training job where it is cheapest (spot with
checkpoints, fallback to on-demand or a smaller GPU under AMP, budget cap); dry-run by default:
the plan table, nothing launched. finops_training_job_reaper: hourly, ends job instances whose
job is over or unknown."""

from finops.orchestration.training_jobs import build_training_job_dag, build_training_job_reaper_dag

dag = build_training_job_dag(doc_md=__doc__)
reaper = build_training_job_reaper_dag()
