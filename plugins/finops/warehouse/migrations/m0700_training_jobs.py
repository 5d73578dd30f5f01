"""Training jobs and their attempts (finops.jobs): what each job was asked to do, where each
attempt ran, what it cost by estimate, and why the executor made every move.

training_jobs: one row per job (job_id is derived from dag_id / run_id / task_id, so an
Airflow retry finds the same row). spec_json is the validated spec; plan_table the newest
decision's explanation table; state running | finished | stopped | failed | waiting |
interrupted | dry_run. excluded_json lists candidates a capacity error ruled out.

training_job_attempts: one row per launch. outcome launching | running | finished |
preempted | moved (deadline) | stopped (budget) | failed | capacity | torn_down | lost;
launch_reason is the planner's reason, end_reason what ended it. tags_json holds the tags the
instance carries (job, attempt, dag_id, run_id), which is how the bill joins back."""

from __future__ import annotations

VERSION = 700
DESCRIPTION = "training_jobs, training_job_attempts"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    money = "DECIMAL(18,4)" if dialect == "duckdb" else "NUMERIC(18,4)"
    price = "DECIMAL(18,6)" if dialect == "duckdb" else "NUMERIC(18,6)"
    return [
        f"""CREATE TABLE IF NOT EXISTS training_jobs (
            job_id {text} NOT NULL PRIMARY KEY,
            name {text} NOT NULL,
            team {text} NOT NULL,
            project {text} NOT NULL,
            dag_id {text},
            run_id {text},
            task_id {text},
            spec_json {text} NOT NULL,
            state {text} NOT NULL,
            state_reason {text},
            plan_table {text},
            steps_total BIGINT NOT NULL,
            steps_done BIGINT NOT NULL DEFAULT 0,
            spot_preemptions INTEGER NOT NULL DEFAULT 0,
            spot_allowed BOOLEAN NOT NULL DEFAULT TRUE,
            excluded_json {text},
            budget_usd {money},
            estimated_cost_usd {money} NOT NULL DEFAULT 0,
            ondemand_cost_usd {money},
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP
        )""",
        f"""CREATE TABLE IF NOT EXISTS training_job_attempts (
            job_id {text} NOT NULL,
            attempt INTEGER NOT NULL,
            provider {text} NOT NULL,
            region {text} NOT NULL,
            instance_type {text} NOT NULL,
            pricing_model {text} NOT NULL,
            precision_mode {text} NOT NULL,
            price_per_hour {price} NOT NULL,
            instance_id {text},
            tags_json {text},
            started_at TIMESTAMP NOT NULL,
            ended_at TIMESTAMP,
            steps_at_start BIGINT NOT NULL,
            steps_at_end BIGINT,
            estimated_cost_usd {money} NOT NULL DEFAULT 0,
            outcome {text} NOT NULL,
            launch_reason {text},
            end_reason {text},
            plan_table {text},
            PRIMARY KEY (job_id, attempt)
        )""",
        "CREATE INDEX IF NOT EXISTS training_jobs_state ON training_jobs (state, updated_at)",
        "CREATE INDEX IF NOT EXISTS training_job_attempts_instance ON training_job_attempts (instance_id)",
    ]
