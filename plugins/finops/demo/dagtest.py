"""Run one DAG through Airflow's own `dag.test()` in this process:
`python -m finops.demo.dagtest DAG_ID '{"param": "value"}' [--no-retries]`. Exit 0 on success.
`--no-retries`: a failing task fails the run at once instead of sitting out its retry delays
(minutes each) inside dag.test().

The demo and the end-to-end tests call it as a subprocess so Airflow's task logs go to a file
instead of flooding the terminal."""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    no_retries = "--no-retries" in argv
    argv = [a for a in argv if a != "--no-retries"]
    dag_id, conf = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    # the DAG's own file when it is named after the DAG (parsing all of dags/ costs seconds a run)
    own = REPO_ROOT / "dags" / f"{dag_id}.py"
    bag = DagBag(dag_folder=str(own)) if own.exists() else None
    if bag is None or bag.get_dag(dag_id) is None:
        bag = DagBag(dag_folder=str(REPO_ROOT / "dags"))
    if bag.import_errors:
        print(f"DAG import errors: {bag.import_errors}", file=sys.stderr)
        return 2
    dag = bag.get_dag(dag_id)
    if dag is None:
        print(f"DAG {dag_id} not found (found: {sorted(bag.dags)})", file=sys.stderr)
        return 2
    if no_retries:
        for task in dag.tasks:
            task.retries = 0
    t0 = time.perf_counter()
    dr = dag.test(run_conf=conf)
    print(f"\nFINOPS_DAGTEST {dag_id} state={dr.state} seconds={time.perf_counter() - t0:.1f}")
    return 0 if str(dr.state) == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
