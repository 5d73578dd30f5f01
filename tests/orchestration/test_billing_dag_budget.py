"""A billing DAG's worst run (every task on its critical path timing out on every try, with the
retry delays between) must end before its next scheduled run. The hourly Lambda DAG's tasks
each had a timeout below an hour, but plan (30 min) + load (45 min) + summary (30 min), times
four tries each, added up to about seven hours: with max_active_runs=1 one stuck run held back
the next six."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _worst_task(t) -> timedelta:  # type: ignore[no-untyped-def]
    """Every try runs to its timeout; between tries the longest delay Airflow may wait."""
    delay = t.retry_delay
    if t.retry_exponential_backoff:
        delay = t.max_retry_delay or timedelta(days=1)
    return t.execution_timeout * (t.retries + 1) + delay * t.retries


def _worst_run(dag) -> timedelta:  # type: ignore[no-untyped-def]
    """The longest path through the task graph, each task at its worst."""
    memo: dict[str, timedelta] = {}

    def longest(task_id: str) -> timedelta:
        if task_id not in memo:
            t = dag.get_task(task_id)
            memo[task_id] = _worst_task(t) + max(
                (longest(d) for d in t.downstream_task_ids), default=timedelta(0)
            )
        return memo[task_id]

    return max(longest(t.task_id) for t in dag.roots)


def _interval(dag) -> timedelta:  # type: ignore[no-untyped-def]
    from croniter import croniter

    it = croniter(dag.timetable.expression, datetime(2026, 1, 1, tzinfo=UTC))
    return -(it.get_next(datetime) - it.get_next(datetime))


@pytest.mark.parametrize("provider", ["lambda"])
def test_the_hourly_billing_dag_worst_run_fits_its_schedule(provider, airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"finops_billing_{provider}.py"))
    assert not bag.import_errors, bag.import_errors
    dag = bag.get_dag(f"finops_billing_{provider}")
    assert _interval(dag) == timedelta(hours=1)
    assert _worst_run(dag) < _interval(dag), _worst_run(dag)
    assert dag.get_task("load_partition").execution_timeout >= timedelta(minutes=15)  # still room to load
