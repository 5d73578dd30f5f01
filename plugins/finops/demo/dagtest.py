"""Run one DAG through Airflow's own `dag.test()` in this process:
`python -m finops.demo.dagtest DAG_ID '{"param": "value"}'`. Exit 0 on success.

The demo and the end-to-end tests call it as a subprocess so Airflow's task logs go to a file
instead of flooding the terminal."""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    dag_id, conf = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    bag = DagBag(dag_folder=str(REPO_ROOT / "dags"))
    if bag.import_errors:
        print(f"DAG import errors: {bag.import_errors}", file=sys.stderr)
        return 2
    dag = bag.get_dag(dag_id)
    if dag is None:
        print(f"DAG {dag_id} not found (found: {sorted(bag.dags)})", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    dr = dag.test(run_conf=conf)
    print(f"\nFINOPS_DAGTEST {dag_id} state={dr.state} seconds={time.perf_counter() - t0:.1f}")
    return 0 if str(dr.state) == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
