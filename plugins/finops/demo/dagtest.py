"""Run DAGs through Airflow's own `dag.test()`:

- `python -m finops.demo.dagtest DAG_ID '{"param": "value"}' [--no-retries]`: one run, exit 0 on
  success;
- `python -m finops.demo.dagtest --serve RESULT_FD`: one JSON request a line on stdin
  (`{"dag_id", "conf", "env", "no_retries"}`), one JSON result a line on RESULT_FD
  (`{"dag_id", "state", "seconds"}`), until stdin closes.

`--no-retries`: a failing task fails the run at once instead of sitting out its retry delays
(minutes each) inside dag.test().

The demo and the end-to-end tests call it as a subprocess so Airflow's task logs go to a file
instead of flooding the terminal. The demo keeps one `--serve` process for all its DAGs: the
first dag.test() of a process builds Airflow's in-process execution API (imports and app
start-up, 15-25 s on 2 busy cores); every later one reuses it (about 6 s a run instead of 26).
Each request carries the parent's environment, so connections the demo registers after the
server started (an emulator's AIRFLOW_CONN_...) are seen by the next run."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def run_one(dag_id: str, conf: dict[str, Any], *, no_retries: bool) -> tuple[str, float]:
    """(final state, seconds) of one dag.test() run; 'import_error' / 'not_found' when the DAG
    cannot be loaded (the reason goes to stderr)."""
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    # the DAG's own file when it is named after the DAG (parsing all of dags/ costs seconds a run)
    own = REPO_ROOT / "dags" / f"{dag_id}.py"
    bag = DagBag(dag_folder=str(own)) if own.exists() else None
    if bag is None or bag.get_dag(dag_id) is None:
        bag = DagBag(dag_folder=str(REPO_ROOT / "dags"))
    if bag.import_errors:
        print(f"DAG import errors: {bag.import_errors}", file=sys.stderr)
        return "import_error", 0.0
    dag = bag.get_dag(dag_id)
    if dag is None:
        print(f"DAG {dag_id} not found (found: {sorted(bag.dags)})", file=sys.stderr)
        return "not_found", 0.0
    if no_retries:
        for task in dag.tasks:
            task.retries = 0
    t0 = time.perf_counter()
    dr = dag.test(run_conf=conf)
    seconds = time.perf_counter() - t0
    print(f"\nFINOPS_DAGTEST {dag_id} state={dr.state} seconds={seconds:.1f}", flush=True)
    return str(dr.state), seconds


def serve(result_fd: int) -> int:
    with os.fdopen(result_fd, "w", buffering=1) as results:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            env: dict[str, str] = req.get("env") or {}
            if env:
                for key in set(os.environ) - set(env):
                    del os.environ[key]
                os.environ.update(env)
            try:
                state, seconds = run_one(
                    req["dag_id"], req.get("conf") or {}, no_retries=req.get("no_retries", True)
                )
            except Exception as e:  # noqa: BLE001 - reported to the caller as this run's state
                print(
                    f"dag.test({req['dag_id']}) raised {type(e).__name__}: {e}", file=sys.stderr, flush=True
                )
                state, seconds = "error", 0.0
            results.write(json.dumps({"dag_id": req["dag_id"], "state": state, "seconds": seconds}) + "\n")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve(int(argv[1]))
    no_retries = "--no-retries" in argv
    argv = [a for a in argv if a != "--no-retries"]
    dag_id, conf = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    state, _ = run_one(dag_id, conf, no_retries=no_retries)
    if state in ("import_error", "not_found"):
        return 2
    return 0 if state == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
