"""Every task of the showback, anomaly, monthly report and budget DAGs ends: an execution_timeout
on each, no longer than a billing load's (they run on billing events, or monthly). These DAGs
run with max_active_runs=1, so one hung task (a warehouse lock never granted, an SMTP server
that accepts and never answers) would hold back every later run."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAG_IDS = [
    "finops_showback",
    "finops_anomalies",
    "finops_anomalies_teams",
    "finops_report_monthly",
    "finops_budgets",
]


@pytest.fixture(scope="module")
def dags():
    from airflow.dag_processing.dagbag import DagBag

    out = {}
    for dag_id in DAG_IDS:  # one file each: parsing the whole folder costs seconds for nothing
        bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
        assert not bag.import_errors, bag.import_errors
        out[dag_id] = bag.dags[dag_id]
    return out


def test_every_task_has_a_timeout_shorter_than_the_schedule(dags):
    problems = []
    for dag_id, dag in dags.items():
        assert dag.tasks, dag_id
        for t in dag.tasks:
            if t.execution_timeout is None:
                problems.append(f"{dag_id}.{t.task_id}: no execution_timeout")
            elif t.execution_timeout > timedelta(
                hours=3
            ):  # the billing loads' bound; all these run daily or less
                problems.append(
                    f"{dag_id}.{t.task_id}: timeout {t.execution_timeout} longer than a billing load"
                )
    assert not problems, "\n".join(problems)
    # The allocation rewrites a whole month per period: more room than the bookkeeping tasks.
    showback = dags["finops_showback"]
    assert showback.get_task("allocate").execution_timeout > showback.get_task("periods").execution_timeout
