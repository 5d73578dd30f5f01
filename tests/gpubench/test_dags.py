"""The two benchmark DAGs: integrity, and dag.test() runs against moto (dry-run, and a real
launch whose results never arrive: the teardown must still terminate the instance)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.fixtures.bench import alive_instances


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(f"dags/{dag_id}.py")
    assert not bag.import_errors
    return bag.dags[dag_id]


@pytest.fixture
def bench_config(tmp_path, monkeypatch, finops_home, bench_settings):
    cfg = {
        "benchmarks": bench_settings.model_dump() | {"wait_timeout_minutes": 0.01, "terminate_timeout_s": 30}
    }
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(cfg))))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    return path


def test_benchmark_dag_shape():
    dag = _dag("finops_gpu_benchmark")
    assert dag.params["dry_run"] is True
    tasks = dag.task_dict
    assert tasks["benchmark.terminate"].is_teardown
    assert tasks["benchmark.prepare"].is_setup and tasks["benchmark.launch"].is_setup
    assert tasks["benchmark.wait"].retries == 0
    assert {t.task_id for t in tasks["benchmark.launch"].downstream_list} >= {"benchmark.wait"}
    reaper = _dag("finops_bench_reaper")
    assert reaper.params["dry_run"] is True and "reap" in reaper.task_dict


def test_launches_are_serialised_so_the_running_cap_holds(bench_ec2, bench_settings, aws_conn):
    """The max_running cap counts live tagged instances, then launches: two launches side by side
    (mapped tasks run in parallel) both saw room under a cap of 1 and both launched."""
    import threading

    from finops.gpubench import lifecycle
    from finops.gpubench.launchers.aws import AwsLauncher
    from finops.gpubench.operators import make_presign

    client, _ = bench_ec2
    targets, _ = lifecycle.plan(bench_settings)
    both_counted = threading.Barrier(2, timeout=10)

    def counted(**kw) -> None:  # both launches have counted the live instances before either creates
        both_counted.wait()

    client.meta.events.register("before-call.ec2.RunInstances", counted)

    def launch(i: int) -> None:
        ln = AwsLauncher(client, bench_settings.targets[i], max_running=1)
        lifecycle.launch(
            lifecycle.prepare(bench_settings, targets[i], "run-1"),
            bench_settings,
            ln,
            dry_run=False,
            wh=None,
            presign=make_presign(aws_conn),
        )

    threads = [threading.Thread(target=launch, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(alive_instances(client)) == 2  # the check alone does not hold under concurrency ...
    dag = _dag("finops_gpu_benchmark")
    assert dag.max_active_runs == 1  # ... so the DAG never runs two launches at once
    assert dag.task_dict["benchmark.launch"].max_active_tis_per_dagrun == 1


@pytest.mark.slow
def test_real_run_without_results_still_tears_down(airflow_db, bench_config, bench_ec2, bench_alerts):
    from finops.warehouse import connect

    client, _ = bench_ec2
    dr = _dag("finops_gpu_benchmark").test(
        run_conf={"dry_run": False, "targets": ["aws/us-east-1/p5.48xlarge/spot"]}
    )
    states = {(ti.task_id, ti.map_index): ti.state for ti in dr.get_task_instances()}
    assert dr.state == "failed"
    assert states[("benchmark.launch", 0)] == "success"
    assert states[("benchmark.wait", 0)] == "failed"
    assert states[("benchmark.collect", 0)] == "upstream_failed"
    assert states[("benchmark.terminate", 0)] == "success"
    assert states[("report", -1)] == "failed"  # the failure is reported at the end of the run
    assert alive_instances(client) == []  # nothing left running
    wh = connect()
    try:
        assert wh.query("SELECT status FROM gpu_benchmark_runs") == [("timeout",)]
        acts = wh.query("SELECT action, result FROM policy_actions ORDER BY created_at")
    finally:
        wh.close()
    assert acts == [("launch", "ok"), ("terminate", "ok")]
    assert "benchmark_wait_failed" in [e.kind for e in bench_alerts]


def test_unknown_target_fails_the_plan_at_once(airflow_db, bench_config):
    """A target key that is not configured cannot be fixed by a retry: before, plan retried
    twice with backoff (2.5 min) before the run failed."""
    dr = _dag("finops_gpu_benchmark").test(
        run_conf={"dry_run": True, "targets": ["aws/us-east-1/p5.48xlarge"]}
    )
    tries = {ti.task_id: (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}
    assert str(dr.state) == "failed"
    assert tries["plan"] == ("failed", 1)


def test_a_retried_reaper_run_does_not_reap_an_instance_twice(
    airflow_db, finops_home, tmp_path, monkeypatch, bench_lambda_api
):
    """The reaper retries when any cloud failed. Its retry listed the Lambda instance the first
    attempt had terminated (Lambda shows it `terminating` for a while), terminated it again and
    audited a second reap, spending the cap on it. Now an instance already ending is left be."""
    from datetime import UTC, datetime, timedelta

    from werkzeug.wrappers import Response

    from finops.demo.emulators import conn_env_var
    from finops.gpubench.launchers.base import LaunchSpec
    from finops.gpubench.launchers.lambda_cloud import LambdaLauncher
    from finops.gpubench.launchers.rest import RestClient
    from finops.gpubench.settings import parse_settings
    from finops.warehouse import connect

    api, server = bench_lambda_api, bench_lambda_api.server
    target = {
        "provider": "lambda",
        "region": "us-west-1",
        "instance_type": "gpu_1x_h100_sxm5",
        "ssh_key_name": "ops",
    }
    settings = parse_settings({"targets": [target]})
    expired = datetime.now(UTC) - timedelta(hours=2)
    spec = LaunchSpec(
        "0123456789abcdef0123",
        "finops_gpu_benchmark",
        "manual__old",
        "us-west-1",
        "gpu_1x_h100_sxm5",
        "ondemand",
        "#!/bin/bash",
        expired,
        30,
    )
    [iid] = LambdaLauncher(RestClient(server.url_for("/"), api.api_key), settings.targets[0]).launch(spec)

    def broken_cloud(request):  # a second cloud whose listing fails; meanwhile Lambda still shows
        for i in api.instances.values():  # the instance the first attempt ended as terminating
            if i["status"] == "terminated":
                i["status"] = "terminating"
        return Response('{"error": {"code": "global/invalid-api-key", "message": "no"}}', status=401)

    server.expect_request("/broken/api/v1/instances", method="GET").respond_with_handler(broken_cloud)
    for conn_id, host in (
        ("lambda_cloud_default", server.url_for("/").rstrip("/")),
        ("lambda_broken", server.url_for("/broken")),
    ):
        monkeypatch.setenv(
            conn_env_var(conn_id), json.dumps({"conn_type": "http", "host": host, "password": api.api_key})
        )
    cfg = {
        "benchmarks": {
            "dry_run": False,
            "targets": [target, target | {"region": "us-east-1", "conn_id": "lambda_broken"}],
        }
    }
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    dag = _dag("finops_bench_reaper")
    dag.get_task("reap").retries = 1
    dag.get_task("reap").retry_delay = timedelta(seconds=1)
    dr = dag.test(run_conf={"dry_run": False})
    [ti] = dr.get_task_instances()
    assert (str(dr.state), ti.try_number) == ("failed", 2)  # the broken cloud failed both attempts
    wh = connect()
    try:
        reaps = wh.query("SELECT result FROM policy_actions WHERE action = 'reap' AND resource_id = ?", [iid])
    finally:
        wh.close()
    assert reaps == [("ok",)]
