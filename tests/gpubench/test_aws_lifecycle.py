"""The whole benchmark lifecycle against moto EC2 + S3, with a failure injected at every step:
nothing may be left running, and every failure must be reported (runs table, audit, alert)."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import botocore.exceptions
import pytest
import requests

from finops.gpubench import lifecycle
from finops.gpubench.launchers.aws import AwsLauncher
from finops.gpubench.launchers.base import CapReached, LaunchError, TerminateError
from finops.gpubench.operators import make_presign, make_reader
from finops.gpubench.triggers import BenchResultsTrigger
from tests.fixtures.bench import alive_instances

DAG_RUN = "scheduled__2026-11-16T06:00:00+00:00"


def _launcher(bench_ec2, settings, idx=0):
    client, _ = bench_ec2
    return AwsLauncher(client, settings.targets[idx], max_running=settings.max_running)


def _prepared(settings, idx=0, run=DAG_RUN):
    targets, _ = lifecycle.plan(settings)
    return lifecycle.prepare(settings, targets[idx], run)


def _launch_live(bench_ec2, settings, aws_conn, wh):
    """(launcher, prepared run, its live launch on moto): the start of most lifecycle tests."""
    launcher = _launcher(bench_ec2, settings)
    prepared = _prepared(settings)
    launched = lifecycle.launch(
        prepared, settings, launcher, dry_run=False, wh=wh, presign=make_presign(aws_conn)
    )
    return launcher, prepared, launched


def _upload_url(client, instance_id: str) -> str:
    """Read the user data back from EC2 and pull out the pre-signed URL the instance would PUT to."""
    ud = client.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")["UserData"]["Value"]
    script = base64.b64decode(ud).decode()
    m = re.search(r"--upload-file \"\$OUT\" '([^']+)'", script)
    assert m, script[-500:]
    return m.group(1)


def _instance_puts(url: str, body: str) -> None:
    r = requests.put(url, data=body.encode(), headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 200, r.text


def _wait(launched, settings, timeout_s=5.0, poll_s=0.05):
    trig = BenchResultsTrigger(
        launched["results_uri"], settings.results_conn_id, timeout_s=timeout_s, poll_s=poll_s
    )

    async def first():
        async for ev in trig.run():
            return ev.payload

    return asyncio.run(first())


def _runs(wh):
    return wh.query("SELECT bench_run_id, status, errors FROM gpu_benchmark_runs")


def test_happy_path_launch_wait_collect_terminate(bench_ec2, bench_settings, duckdb_wh, aws_conn):
    client, image = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, duckdb_wh)
    [iid] = launched["instance_ids"]
    desc = client.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
    tags = {t["Key"]: t["Value"] for t in desc["Tags"]}
    assert tags["finops:benchmark"] == "true"
    assert tags["finops:bench-run-id"] == prepared["bench_run_id"]
    assert tags["finops:run-id"] == DAG_RUN and tags["finops:dag-id"] == "finops_gpu_benchmark"
    assert tags["finops:expires-at"] == prepared["expires_at"]
    assert desc["ImageId"] == image and desc["InstanceType"] == "p5.48xlarge"
    behaviour = client.describe_instance_attribute(
        InstanceId=iid, Attribute="instanceInitiatedShutdownBehavior"
    )
    assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"

    # idempotent retry: the same ClientToken gives the same instance, not a second one
    again = lifecycle.launch(
        prepared, bench_settings, launcher, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
    )
    assert again["instance_ids"] == [iid]
    assert alive_instances(client) == [iid]

    # not there yet -> a short wait times out; then "the instance" uploads and the wait finds it
    assert _wait(launched, bench_settings, timeout_s=0.2)["status"] == "timeout"
    from tests.fixtures.bench import BENCH_DOC

    _instance_puts(_upload_url(client, iid), json.dumps(BENCH_DOC))
    assert _wait(launched, bench_settings)["status"] == "found"

    n = lifecycle.collect(launched | {"dag_run_id": DAG_RUN}, make_reader(aws_conn), duckdb_wh)
    assert n == len(BENCH_DOC["results"])
    rows = duckdb_wh.query(
        "SELECT metric, dtype, value, gpu_count, pricing_model FROM gpu_benchmarks "
        "WHERE metric = 'matmul_tflops' ORDER BY dtype"
    )
    assert rows == [("matmul_tflops", "bf16", 760.0, 8, "spot"), ("matmul_tflops", "fp32", 51.0, 8, "spot")]
    [(bid, status, errors)] = _runs(duckdb_wh)
    assert (bid, status) == (prepared["bench_run_id"], "ok")
    assert "transfer: RuntimeError: boom" in json.loads(errors)[0]  # a failed section is reported

    rep = lifecycle.terminate(
        prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None
    )
    assert rep.terminated == [iid] and not rep.errors
    assert alive_instances(client) == []
    actions = duckdb_wh.query("SELECT action, result, resource_id FROM policy_actions ORDER BY created_at")
    assert ("terminate", "ok", iid) in actions
    assert sum(1 for a in actions if a[:2] == ("launch", "ok")) == 2


def test_launch_fails_after_instance_was_created(
    bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts
):
    client, _ = bench_ec2

    def lost_reply(**kwargs):  # the instance exists, but the caller never hears about it
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="moto")

    client.meta.events.register("after-call.ec2.RunInstances", lost_reply)
    launcher = _launcher(bench_ec2, bench_settings)
    prepared = _prepared(bench_settings)
    with pytest.raises(LaunchError) as err:
        lifecycle.launch(
            prepared, bench_settings, launcher, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
        )
    client.meta.events.unregister("after-call.ec2.RunInstances", lost_reply)
    assert err.value.cleaned
    assert alive_instances(client) == []  # the launcher found it by tag and terminated it
    [created] = [i["InstanceId"] for r in client.describe_instances()["Reservations"] for i in r["Instances"]]
    [(_, status, errors)] = _runs(duckdb_wh)
    assert status == "failed" and "launch" in json.loads(errors)[0]
    [(result, evidence)] = duckdb_wh.query(
        "SELECT result, evidence FROM policy_actions WHERE action = 'launch'"
    )
    assert result == "failed" and json.loads(evidence)["instance_ids"] == [created]
    # the cleanup's termination of the instance the lost call created is audited, by instance id
    assert duckdb_wh.query("SELECT resource_id, result FROM policy_actions WHERE action = 'terminate'") == [
        (created, "ok")
    ]
    assert [e.kind for e in bench_alerts] == ["benchmark_launch_failed"]
    # teardown still runs and finds nothing left
    rep = lifecycle.terminate(
        prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None
    )
    assert rep.terminated == []


def test_results_never_arrive(bench_ec2, bench_settings, finops_home, aws_conn, bench_alerts):
    from finops.gpubench.operators import WaitForBenchResultsOperator
    from finops.warehouse import connect

    client, _ = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, None)
    event = _wait(launched, bench_settings, timeout_s=0.3)
    assert event["status"] == "timeout" and event["polls"] >= 1 and event["waited_s"] >= 0.3
    op = WaitForBenchResultsOperator(task_id="wait", launched=launched | {"dag_run_id": DAG_RUN})
    with pytest.raises(TimeoutError, match="never arrived"):
        op.execute_complete({}, event)
    wh = connect()
    try:
        assert [r[1] for r in _runs(wh)] == ["timeout"]
        rep = lifecycle.terminate(prepared, launcher, dry_run=False, wh=wh, poll_s=0.01, sleep=lambda s: None)
    finally:
        wh.close()
    assert rep.terminated == launched["instance_ids"]
    assert alive_instances(client) == []
    assert "benchmark_wait_failed" in [e.kind for e in bench_alerts]


@pytest.mark.parametrize(
    "body, message",
    [
        ("not json {", "JSONDecodeError"),
        (json.dumps({"error": "benchmark exited 137 without a result", "host": "ip-10-0-0-1"}), "exited 137"),
        (json.dumps({"schema_version": 1, "suite": "finops.bench"}), "required property"),
    ],
)
def test_collect_fails_then_teardown(
    bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts, body, message
):
    client, _ = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, duckdb_wh)
    _instance_puts(_upload_url(client, launched["instance_ids"][0]), body)
    with pytest.raises(lifecycle.CollectError, match=message):
        lifecycle.collect(launched, make_reader(aws_conn), duckdb_wh)
    assert duckdb_wh.query("SELECT count(*) FROM gpu_benchmarks") == [(0,)]
    [(_, status, errors)] = _runs(duckdb_wh)
    assert status == "failed" and message in json.loads(errors)[0]
    lifecycle.terminate(prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None)
    assert alive_instances(client) == []
    assert [e.kind for e in bench_alerts] == ["benchmark_collect_failed"]


def test_terminate_fails_then_succeeds(bench_ec2, bench_settings, duckdb_wh, aws_conn):
    client, _ = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, duckdb_wh)
    failures = {"left": 2}

    def flaky(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "RequestLimitExceeded", "Message": "Request limit exceeded."}},
                "TerminateInstances",
            )

    client.meta.events.register("before-call.ec2.TerminateInstances", flaky)
    waits: list[float] = []
    try:
        rep = lifecycle.terminate(
            prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=waits.append
        )
    finally:
        client.meta.events.unregister("before-call.ec2.TerminateInstances", flaky)
    assert len(rep.errors) == 2 and "RequestLimitExceeded" in rep.errors[0]
    assert waits[:2] == [0.02, 0.04]  # exponential backoff between failed attempts
    assert rep.terminated == launched["instance_ids"]
    assert alive_instances(client) == []


def test_terminate_never_succeeds_is_loud(bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts):
    client, _ = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, duckdb_wh)

    def broken(**kwargs):
        raise botocore.exceptions.ClientError(
            {"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "TerminateInstances"
        )

    client.meta.events.register("before-call.ec2.TerminateInstances", broken)
    try:
        with pytest.raises(TerminateError, match="still alive"):
            lifecycle.terminate(
                prepared,
                launcher,
                dry_run=False,
                wh=duckdb_wh,
                timeout_s=0.05,
                poll_s=0.01,
                sleep=lambda s: None,
            )
    finally:
        client.meta.events.unregister("before-call.ec2.TerminateInstances", broken)
    assert [e.severity for e in bench_alerts if e.kind == "benchmark_instance_left_running"] == ["critical"]
    assert duckdb_wh.query(
        "SELECT resource_id FROM policy_actions WHERE action='terminate' AND result='failed'"
    ) == [(launched["instance_ids"][0],)]
    lifecycle.terminate(prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None)
    assert alive_instances(client) == []


def test_dry_run_launches_nothing_and_audits(bench_ec2, bench_settings, duckdb_wh):
    client, _ = bench_ec2
    prepared = _prepared(bench_settings)
    out = lifecycle.launch(
        prepared,
        bench_settings,
        _launcher(bench_ec2, bench_settings),
        dry_run=True,
        wh=duckdb_wh,
        presign=None,
    )
    assert out["dry_run"] and out["instance_ids"] == [] and 0 < out["user_data_bytes"] < 16 * 1024
    assert alive_instances(client) == []
    assert duckdb_wh.query("SELECT action, result, dry_run FROM policy_actions") == [
        ("launch", "dry_run", True)
    ]
    assert [r[1] for r in _runs(duckdb_wh)] == ["dry_run"]


def test_cap_on_running_instances(bench_ec2, bench_settings, duckdb_wh, aws_conn):
    client, _ = bench_ec2
    launcher = _launcher(bench_ec2, bench_settings)
    launcher.max_running = 1
    lifecycle.launch(
        _prepared(bench_settings, run="r1"),
        bench_settings,
        launcher,
        dry_run=False,
        wh=duckdb_wh,
        presign=make_presign(aws_conn),
    )
    with pytest.raises(CapReached):
        lifecycle.launch(
            _prepared(bench_settings, run="r2"),
            bench_settings,
            launcher,
            dry_run=False,
            wh=duckdb_wh,
            presign=make_presign(aws_conn),
        )
    assert len(alive_instances(client)) == 1


def test_plan_caps_and_rejects_unknown_targets(bench_settings):
    chosen, dropped = lifecycle.plan(bench_settings, max_instances=1)
    assert [t["key"] for t in chosen] == ["aws/us-east-1/p5.48xlarge/spot"]
    assert dropped == ["aws/us-east-1/p4d.24xlarge/ondemand"]
    with pytest.raises(ValueError, match="unknown benchmark targets"):
        lifecycle.plan(bench_settings, only=["aws/nowhere/x/spot"])


def test_reaper_terminates_only_expired_tagged_instances(bench_ec2, bench_settings, duckdb_wh, aws_conn):
    from datetime import UTC, datetime, timedelta

    client, image = bench_ec2
    launcher = _launcher(bench_ec2, bench_settings)
    targets, _ = lifecycle.plan(bench_settings)
    old = lifecycle.prepare(bench_settings, targets[0], "old", now=datetime.now(UTC) - timedelta(hours=2))
    new = lifecycle.prepare(bench_settings, targets[0], "new")
    [old_id] = lifecycle.launch(
        old, bench_settings, launcher, dry_run=False, wh=None, presign=make_presign(aws_conn)
    )["instance_ids"]
    [new_id] = lifecycle.launch(
        new, bench_settings, launcher, dry_run=False, wh=None, presign=make_presign(aws_conn)
    )["instance_ids"]
    other = client.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="p5.48xlarge",
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [{"Key": "finops:expires-at", "Value": "2000-01-01T00:00:00Z"}],
            }
        ],
    )
    other_id = other["Instances"][0]["InstanceId"]  # expired tag but not a benchmark: not ours

    dry = lifecycle.reap([launcher], dry_run=True, wh=duckdb_wh, run_id="reaper-1")
    assert dry["expired"] == [f"aws:us-east-1:{old_id}"] and dry["terminated"] == []
    assert sorted(alive_instances(client)) == sorted([old_id, new_id, other_id])
    real = lifecycle.reap([launcher], dry_run=False, wh=duckdb_wh, run_id="reaper-2")
    assert real["terminated"] == [f"aws:us-east-1:{old_id}"] and real["kept"] == 1 and not real["errors"]
    assert sorted(alive_instances(client)) == sorted([new_id, other_id])
    assert duckdb_wh.query(
        "SELECT run_id, result FROM policy_actions WHERE action = 'reap' ORDER BY run_id"
    ) == [("reaper-1", "dry_run"), ("reaper-2", "ok")]


def test_cpu_fallback_result_is_refused(bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts):
    """An instance whose torch sees no GPU must not have its CPU figures stored as the GPU's."""
    from finops.gpubench.suite import run_suite

    client, _ = bench_ec2
    launcher, prepared, launched = _launch_live(bench_ec2, bench_settings, aws_conn, duckdb_wh)
    iid = launched["instance_ids"][0]
    ud = client.describe_instance_attribute(InstanceId=iid, Attribute="userData")["UserData"]["Value"]
    assert " --device=cuda " in base64.b64decode(ud).decode()  # no silent fallback on the instance
    cpu_doc = run_suite(
        "cpu", quick=True, sections=["matmul"]
    )  # what `--device auto` did on a GPU-less torch
    _instance_puts(_upload_url(client, iid), json.dumps(cpu_doc))
    with pytest.raises(lifecycle.CollectError, match="not a CUDA GPU"):
        lifecycle.collect(launched, make_reader(aws_conn), duckdb_wh)
    assert duckdb_wh.query("SELECT count(*) FROM gpu_benchmarks") == [(0,)]
    assert [r[1] for r in _runs(duckdb_wh)] == ["failed"]
    assert [e.kind for e in bench_alerts] == ["benchmark_collect_failed"]
    lifecycle.terminate(prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None)
    assert alive_instances(client) == []


def test_retry_after_a_cleaned_up_launch_gets_a_new_instance(
    bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts
):
    """EC2 answers a repeated ClientToken with the instance it first created, even once that is
    terminated (moto does not: the handlers below give it EC2's token memory). The task's retry
    after a failed attempt whose cleanup ended the instance got the dead instance back and then
    waited 50 minutes for results that could never come."""
    from botocore.awsrequest import AWSResponse

    client, _ = bench_ec2
    by_token: dict[str, list[str]] = {}
    sent: list[str] = []

    def note_token(params, **kw):
        sent.append(params["ClientToken"])

    def replay_token(**kw):  # EC2 idempotency: same token -> the same instances, whatever their state now
        ids = by_token.get(sent[-1])
        if not ids:
            return None
        res = client.describe_instances(InstanceIds=ids)
        return AWSResponse("https://ec2.moto", 200, {}, None), {
            "Instances": [i for r in res["Reservations"] for i in r["Instances"]]
        }

    def remember(parsed, **kw):
        by_token.setdefault(sent[-1], [i["InstanceId"] for i in parsed.get("Instances", [])])

    def lost_reply(**kw):
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="moto")

    ev = client.meta.events
    ev.register("before-parameter-build.ec2.RunInstances", note_token)
    ev.register("before-call.ec2.RunInstances", replay_token)
    ev.register("after-call.ec2.RunInstances", remember)
    ev.register("after-call.ec2.RunInstances", lost_reply)
    launcher = _launcher(bench_ec2, bench_settings)
    prepared = _prepared(bench_settings)
    with pytest.raises(LaunchError):
        lifecycle.launch(
            prepared, bench_settings, launcher, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
        )
    ev.unregister("after-call.ec2.RunInstances", lost_reply)
    [first] = by_token[sent[0]]
    assert alive_instances(client) == []  # the first attempt's cleanup ended it

    retry = lifecycle.launch(
        prepared, bench_settings, launcher, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
    )
    [new] = retry["instance_ids"]
    assert new != first and alive_instances(client) == [new]
    assert sent[1] == sent[0] and sent[2] != sent[0]  # the token was tried, then a fresh one
