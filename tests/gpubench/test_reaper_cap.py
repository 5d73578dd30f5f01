"""The reaper's termination cap is per DAG run, not per try: a try that terminated some
instances and then failed (one terminate answered 503) used to hand its retry a fresh cap, so
a run with `max_terminations=2` and three retries could end 8 instances."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from finops.gpubench import lifecycle
from finops.gpubench.launchers.base import LaunchSpec
from finops.gpubench.launchers.lambda_cloud import LambdaLauncher
from finops.gpubench.launchers.rest import RestClient
from finops.gpubench.settings import parse_settings

TARGET = {
    "provider": "lambda",
    "region": "us-west-1",
    "instance_type": "gpu_1x_h100_sxm5",
    "ssh_key_name": "ops",
}


def _expired_fleet(api, n: int) -> tuple[LambdaLauncher, list[str]]:  # type: ignore[no-untyped-def]
    settings = parse_settings({"ttl_minutes": 30, "targets": [TARGET]})
    ln = LambdaLauncher(
        RestClient(
            api.server.url_for("/"), "secret-key", sleep=lambda s: None, backoff_s=0.01, max_attempts=1
        ),
        settings.targets[0],
        max_running=n,
    )
    started = datetime.now(UTC) - timedelta(hours=3)
    ids = []
    for i in range(n):
        targets, _ = lifecycle.plan(settings)
        p = lifecycle.prepare(settings, targets[0], f"manual__{i}", now=started)
        ids += ln.launch(
            LaunchSpec(
                p["bench_run_id"],
                "finops_gpu_benchmark",
                f"manual__{i}",
                "us-west-1",
                "gpu_1x_h100_sxm5",
                "on_demand",
                "#!/bin/bash\necho bench",
                started + timedelta(minutes=30),
                30,
            )
        )
    return ln, ids


def test_the_cap_holds_across_retries_of_one_run(bench_lambda_api, duckdb_wh):
    ln, ids = _expired_fleet(bench_lambda_api, 5)
    bench_lambda_api.fail_terminate = 1  # the first terminate fails: the try errors, Airflow retries
    first = lifecycle.reap([ln], dry_run=False, wh=duckdb_wh, run_id="scheduled__1", cap=2)
    assert len(first["errors"]) == 1 and len(first["terminated"]) == 2
    for _ in range(3):  # the task's retries, same DAG run
        again = lifecycle.reap([ln], dry_run=False, wh=duckdb_wh, run_id="scheduled__1", cap=2)
        assert again["terminated"] == [] and again["capped"], again
    assert len(ids) - len(bench_lambda_api.alive()) == 2
    (n,) = duckdb_wh.query("SELECT count(*) FROM policy_actions WHERE action = 'reap' AND result = 'ok'")[0]
    assert n == 2
    # the next DAG run has a cap of its own
    nxt = lifecycle.reap([ln], dry_run=False, wh=duckdb_wh, run_id="scheduled__2", cap=2)
    assert len(nxt["terminated"]) == 2 and len(bench_lambda_api.alive()) == 1
