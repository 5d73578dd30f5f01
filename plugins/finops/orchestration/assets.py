"""The Assets that chain the DAG families, defined once.

A producer's outlet and a consumer's schedule must name the same URI; keeping them here means
a rename cannot leave one DAG waiting on an Asset nobody announces."""

from __future__ import annotations

from airflow.sdk import Asset

FOCUS_COSTS = Asset("finops://focus_costs")
"""Billing data landed in focus_costs (billing DAGs announce; showback, anomalies listen)."""

SHOWBACK = Asset("finops://showback")
"""showback_daily / chargeback_monthly rebuilt (finops_showback announces; team monitors and
budgets listen)."""

PRICES = Asset("finops://prices")
"""Price history and the GPU catalog refreshed (finops_prices announces)."""

TRAINING_JOBS = Asset("finops://training_jobs")
"""A training job ended and its attempts and estimated cost are in training_jobs /
training_job_attempts (finops_training_job announces)."""
