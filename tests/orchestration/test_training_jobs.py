"""finops_training_job end to end through Airflow's dag.test(): the Params form -> job spec ->
TrainingJobOperator -> TrainingJobTrigger (run in line, rebuilt from its serialized kwargs)
-> real torch training (finops.jobs.example_train) on the local provider, checkpoints in S3
(moto server). The first spot attempt is reclaimed at boot, the second while writing its
step-8 checkpoint; a corrupt 'newest' checkpoint planted beforehand is ignored; the spot limit
(2) moves the job to on-demand, which resumes from step 4 and finishes."""

from __future__ import annotations

import hashlib
import json

import boto3
import pytest


def _dag():
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_training_job.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag("finops_training_job")


def test_form_defaults_make_a_dry_run_spec():
    from finops.jobs.spec import parse_job_spec
    from finops.orchestration.training_jobs import spec_from_params, training_job_params

    params = {k: p.value for k, p in training_job_params().items()}
    spec = parse_job_spec(spec_from_params(params, "/data/ckpt"), "params")
    assert params["dry_run"] is True and spec.checkpoint_uri == "/data/ckpt/example-job"
    assert spec.run.module == "finops.jobs.example_train" and spec.budget_usd is None
    params |= {"budget_usd": "12.30", "deadline": "2026-12-01T00:00:00+00:00", "name": "x;rm -rf"}
    with pytest.raises(ValueError, match="params: name: must be 1-63 chars"):
        parse_job_spec(spec_from_params(params, "/data/ckpt"), "params")


@pytest.mark.slow
def test_preempted_at_boot_and_mid_checkpoint_then_on_demand_finishes(
    finops_home, airflow_db, moto_reset, monkeypatch
):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_reset)
    s3 = boto3.client("s3", endpoint_url=moto_reset, region_name="us-east-1")
    s3.create_bucket(Bucket="ckpts")
    # a "newer" checkpoint whose state.pt does not match its marker: never resumed from
    bad = b"not a torch file"
    s3.put_object(Bucket="ckpts", Key="jobs/e2e/ckpt-000000000020/state.pt", Body=bad)
    commit = {
        "format": 1,
        "step": 20,
        "files": {"state.pt": {"bytes": 99, "sha256": hashlib.sha256(bad).hexdigest()}},
    }
    s3.put_object(
        Bucket="ckpts", Key="jobs/e2e/ckpt-000000000020/COMMIT.json", Body=json.dumps(commit).encode()
    )
    monkeypatch.setenv("FINOPS_FAULT", "attempt=1,phase=boot;attempt=2,phase=write,step=8")

    dag = _dag()
    assert [o.name for o in dag.get_task("run_job").outlets] == ["finops://training_jobs"]
    for t in dag.tasks:
        t.retries = 0
    conf = {
        "name": "e2e",
        "steps": 16,
        "checkpoint_uri": "s3://ckpts/jobs/e2e",
        "checkpoint_every_steps": 4,
        "max_spot_preemptions": 2,
        "budget_usd": "50",
        "step_times": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 2000}],
        "candidates": [
            {"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": "spot",
             "price_per_hour": "0.90", "gpu_model": "CPU", "gpu_memory_gib": 8, "interruption_rate_per_h": 0.2},
            {"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": "ondemand",
             "price_per_hour": "3.00", "gpu_model": "CPU", "gpu_memory_gib": 8},
        ],
        "poll_seconds": 0.1,
        "dry_run": False,
    }  # fmt: skip
    run = dag.test(run_conf=conf)
    assert str(run.state) == "success"

    from finops.jobs.executor import job_id_for, provider_from_config
    from finops.jobs.store import JobStore
    from finops.paths import subdir
    from finops.warehouse import connect

    wh = connect()
    try:
        store = JobStore(wh)
        job = store.get_job(job_id_for("finops_training_job", run.run_id, "run_job"))
        attempts = store.attempts(job.job_id)
    finally:
        wh.close()
    assert [(a.pricing_model, a.outcome) for a in attempts] == [
        ("spot", "preempted"),
        ("spot", "preempted"),
        ("ondemand", "finished"),
    ]
    assert [(a.steps_at_start, a.steps_at_end) for a in attempts] == [(0, 0), (0, 4), (4, 16)]
    assert "exit -9" in attempts[0].end_reason and "exit -9" in attempts[1].end_reason
    assert "2 spot preemptions reached the limit (2)" in attempts[2].plan_table
    assert job.state == "finished" and job.spot_preemptions == 2 and job.steps_done == 16
    assert job.estimated_cost_usd == sum(a.estimated_cost_usd for a in attempts) > 0
    assert job.ondemand_cost_usd is not None and job.plan_table == attempts[2].plan_table
    for a in attempts:
        assert a.tags["finops-dag-id"] == "finops_training_job" and a.tags["finops-run-id"] == run.run_id
        assert a.tags["finops-job"] == "e2e" and a.tags["finops-attempt"] == str(a.attempt)
    provider = provider_from_config({"kind": "local", "work_dir": str(subdir("jobs") / "instances")})
    assert "fault: killed at boot" in provider.log_text(attempts[0].instance_id)
    assert "fault: killed while writing ckpt-000000000008/state.pt" in provider.log_text(
        attempts[1].instance_id
    )
    assert provider.log_text(attempts[2].instance_id).startswith("start step=4 resumed=True")
    assert provider.find() == []
    # the half-written step-8 state.pt is there, without a marker; the corrupt 20 was never used
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="ckpts", Prefix="jobs/e2e/")["Contents"]}
    assert "jobs/e2e/ckpt-000000000016/COMMIT.json" in keys


def test_reaper_dag_is_hourly_and_dry_by_default_for_manual_runs():
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_training_job.py"))
    reaper = bag.dags["finops_training_job_reaper"]
    assert reaper.params["dry_run"] is True and reaper.params["max_terminations"] == 50
    assert reaper.timetable.expression == "41 * * * *" and reaper.get_task("reap").retries == 2


def test_reaper_ends_stray_job_instances_on_every_configured_cloud(
    finops_home, airflow_db, lambda_compute, tmp_path, monkeypatch
):
    """finops.yaml names two Lambda Cloud job providers, one unreachable: the stray job instance
    on the reachable one is ended (and audited) all the same, and the run fails naming the other."""
    import yaml

    from finops.demo.emulators import conn_env_var, lambda_connection
    from finops.jobs.clouds import lambda_tags
    from finops.paths import REPO_ROOT
    from tests.fixtures.job_clouds import LAMBDA_KEY

    host, port = lambda_compute.base.removeprefix("http://").rstrip("/").split(":")
    monkeypatch.setenv(
        conn_env_var("lambda_jobs"), json.dumps(lambda_connection(host, int(port), LAMBDA_KEY))
    )
    monkeypatch.setenv(conn_env_var("lambda_gone"), json.dumps(lambda_connection("127.0.0.1", 9, LAMBDA_KEY)))
    lambda_compute.instances["0" * 31 + "7"] = {
        "id": "0" * 31 + "7", "name": "finops-ghost-a1", "status": "active",
        "region": {"name": "us-west-1", "description": "us-west-1"}, "instance_type": {"name": "gpu_1x_a10"},
        "ssh_key_names": ["ops"], "tags": lambda_tags({"finops-job-id": "ghost-job", "finops-attempt": "1"}),
    }  # fmt: skip
    data = yaml.safe_load((REPO_ROOT / "include" / "config" / "finops.yaml").read_text())
    data["jobs"] = {"providers": {
        "lam": {"kind": "lambda", "conn_id": "lambda_jobs", "ssh_key_name": "ops"},
        "gone": {"kind": "lambda", "conn_id": "lambda_gone", "ssh_key_name": "ops"},
    }}  # fmt: skip
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))

    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_training_job.py"))
    reaper = bag.get_dag("finops_training_job_reaper")
    reaper.get_task("reap").retries = 0
    run = reaper.test(run_conf={"dry_run": False, "max_terminations": 5})

    assert str(run.state) == "failed"  # the unreachable provider is not silently skipped
    assert lambda_compute.alive() == []  # the stray instance on the reachable one was ended
    from finops.warehouse import connect

    wh = connect()
    try:
        rows = wh.query("SELECT resource_id, result FROM policy_actions WHERE policy = 'training-job'")
    finally:
        wh.close()
    assert rows == [("0" * 31 + "7", "ok")]
