"""The default_args every FinOps DAG shares, written once.

Each family states only what differs (its retries and its task timeout); the failure callback,
owner and back-off are the same everywhere so a task that fails for good always reaches the
alert routes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from finops.alerts.task_failure import task_failed
from finops.orchestration.retry import PERMANENT_ERRORS


def default_args(
    *,
    execution_timeout: timedelta,
    retries: int = 2,
    retry_delay: timedelta = timedelta(minutes=2),
    max_retry_delay: timedelta = timedelta(minutes=30),
    exponential_backoff: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """default_args for one DAG; `execution_timeout` is required because every task must end
    (a hung call would otherwise hold its slot and, with max_active_runs=1, every later run)."""
    args: dict[str, Any] = {
        "owner": "finops",
        "on_failure_callback": task_failed,  # a task that failed for good reaches the alert routes
        "retries": retries,
        "retry_delay": retry_delay,
        "retry_exponential_backoff": exponential_backoff,
        "execution_timeout": execution_timeout,
        "retry_policy": PERMANENT_ERRORS,  # bad config, refused credentials, 4xx: fail now, not after the retries
    }
    if exponential_backoff:
        args["max_retry_delay"] = max_retry_delay
    args.update(extra)
    return args
