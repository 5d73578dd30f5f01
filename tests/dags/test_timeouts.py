"""Every task of the billing, prices, policy and benchmark DAGs ends: an execution_timeout,
shorter than the DAG's schedule interval. Before, none had one: a load blocked on a PostgreSQL
lock that another session held ran for ever (seen: > 10 min, then killed by hand), holding its
worker slot and, with max_active_runs=1, every later run of the DAG."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.fixtures.aws_billing import AWSB_PREFIX, billing_aws_dag

REPO = Path(__file__).resolve().parents[2]
# The DAGs of this area (showback / anomalies / monthly report are checked with their owners).
DAG_IDS = [
    "finops_billing_aws",
    "finops_billing_azure",
    "finops_billing_gcp",
    "finops_billing_lambda",
    "finops_prices",
    "finops_policy_tags",
    "finops_policy_idle",
    "finops_audit",
    "finops_gpu_benchmark",
    "finops_bench_reaper",
]


@pytest.fixture(scope="module")
def dags():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert not bag.import_errors, bag.import_errors
    return {d: bag.dags[d] for d in DAG_IDS}


def _interval(dag) -> timedelta | None:
    """Time between two consecutive scheduled runs (None: manual only)."""
    from croniter import croniter

    expr = getattr(dag.timetable, "expression", None)
    if not expr:
        return None
    it = croniter(expr, datetime(2026, 1, 1, tzinfo=UTC))
    first = it.get_next(datetime)
    return it.get_next(datetime) - first


def test_every_task_has_a_timeout_shorter_than_the_schedule(dags):
    problems = []
    for dag_id, dag in dags.items():
        interval = _interval(dag)
        for t in dag.tasks:
            if t.task_id.rsplit(".", 1)[-1] == "wait":
                # deferrable: its deferral carries its own timeout (benchmarks.wait_timeout_minutes)
                continue
            if t.execution_timeout is None:
                problems.append(f"{dag_id}.{t.task_id}: no execution_timeout")
            elif interval is not None and t.execution_timeout >= interval:
                problems.append(
                    f"{dag_id}.{t.task_id}: timeout {t.execution_timeout} >= schedule interval {interval}"
                )
    assert not problems, "\n".join(problems)
    assert dags["finops_billing_aws"].get_task("load_partition").execution_timeout >= timedelta(hours=1)


@pytest.mark.postgres
def test_a_load_blocked_on_a_lock_ends(airflow_db, finops_home, billing_config, awsb_deliver, pg_conn_id):
    """The real hang: another session holds the partition's advisory lock, so replace_partition
    waits in PostgreSQL. Airflow's timeout interrupts that wait and the run fails (its timeout cut
    to 20 s here; without one, dag.test() never returned)."""
    from finops.demo.cur_generator import GenSpec
    from finops.warehouse.postgres_wh import PostgresWarehouse

    billing_config({"conn_id": pg_conn_id.conn_id, "schema": pg_conn_id.schema})
    awsb_deliver(GenSpec(period="2026-09", rows=300, seed=1), prefix=AWSB_PREFIX)
    dag = billing_aws_dag()
    assert dag.get_task("load_partition").execution_timeout is not None
    for t in dag.tasks:
        t.retries = 0
    dag.get_task("load_partition").execution_timeout = timedelta(seconds=20)
    with PostgresWarehouse.from_dsn(pg_conn_id.dsn, schema=pg_conn_id.schema) as holder:
        holder.migrate()
        with holder.partition_lock("focus_costs", {"x_source": "main-payer", "x_billing_period": "2026-09"}):
            t0 = time.monotonic()
            dr = dag.test(run_conf={"billing_period": "2026-09"})
            took = time.monotonic() - t0
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert str(dr.state) == "failed" and states["load_partition"] == "failed", states
    assert took < 120, took
