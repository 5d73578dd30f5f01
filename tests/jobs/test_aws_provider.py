"""The `aws` job provider through the operator and trigger against moto (real boto3, real
HTTP): a capacity error on the cheapest candidate, a spot attempt reclaimed, the fallback to
on-demand, the job's own exit code read from the checkpoint store. EC2 calls go through a
small proxy on loopback that answers RunInstances for p5.48xlarge the way EC2 does when it has
no capacity (moto never does); everything else is forwarded to moto unchanged."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from airflow.sdk.exceptions import TaskDeferred
from airflow.sdk.module_loading import import_string

from finops.jobs.aws import AwsJobProvider, user_data
from finops.jobs.executor import job_id_for
from finops.jobs.operator import TrainingJobOperator
from finops.jobs.planner import PlanSettings
from finops.jobs.spec import parse_job_spec
from finops.jobs.store import JobStore
from finops.warehouse import connect

NO_CAPACITY = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>InsufficientInstanceCapacity</Code>'
    "<Message>We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you requested"
    "</Message></Error></Errors><RequestID>r-1</RequestID></Response>"
)


@pytest.fixture
def ec2_proxy(moto_reset):
    up = urlsplit(moto_reset)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            form = parse_qs(body.decode())
            if form.get("Action") == ["RunInstances"] and form.get("InstanceType") == ["p5.48xlarge"]:
                data = NO_CAPACITY.encode()
                self.send_response(400)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            conn.request("POST", self.path, body, headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _spec():
    return {
        "name": "gpu-job", "team": "ml", "project": "p", "steps": 1000,
        "run": {"module": "train.main", "args": ["--lr", "3e-4; rm -rf /"], "bootstrap": [["pip", "install", "x"]]},
        "step_profile": {"measured": [{"gpu_model": "A10G", "precision": "fp32", "step_ms": 500},
                                      {"gpu_model": "H100", "precision": "fp32", "step_ms": 20}]},
        "checkpoint_uri": "s3://ckpts/jobs/gpu-job", "checkpoint_every_steps": 100, "max_spot_preemptions": 1,
    }  # fmt: skip


def _cand(itype, model, price, gpu):
    return {
        "provider": "aws",
        "region": "us-east-1",
        "instance_type": itype,
        "pricing_model": model,
        "price_per_hour": price,
        "gpu_model": gpu,
        "gpu_memory_gib": 24,
        "interruption_rate_per_h": 0.05,
    }


def _event(trigger):
    path, kwargs = trigger.serialize()
    trig = import_string(path)(**json.loads(json.dumps(kwargs)))

    async def first():
        async for ev in trig.run():
            return ev.payload

    return asyncio.run(first())


def test_capacity_spot_reclaim_fallback_and_exit_code(finops_home, moto_reset, ec2_proxy, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_reset)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", ec2_proxy)
    ec2 = boto3.client("ec2", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="ckpts")
    ami = "ami-0abcdef1234567890"  # moto accepts any well-formed id; listing its AMIs costs seconds
    cands = [_cand("p5.48xlarge", "spot", "3", "H100"), _cand("g5.xlarge", "spot", "0.40", "A10G"),
             _cand("g5.xlarge", "ondemand", "1.006", "A10G")]  # fmt: skip
    op = TrainingJobOperator(
        task_id="train", spec=_spec(), candidates=cands, dry_run=False, poll_s=0.05, retries=0,
        provider={"kind": "aws", "region": "us-east-1", "image_id": ami},
        plan_settings=PlanSettings(restart_overhead_h=0.0),
    )  # fmt: skip
    ctx = {"ti": SimpleNamespace(dag_id="dag", run_id="r1", task_id="train", map_index=-1, try_number=1)}
    with pytest.raises(TaskDeferred) as d:
        op.execute(ctx)
    spot_id = d.value.trigger.watch["instance_id"]
    inst = ec2.describe_instances(InstanceIds=[spot_id])["Reservations"][0]["Instances"][0]
    tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
    job_id = job_id_for("dag", "r1", "train")
    assert inst["InstanceType"] == "g5.xlarge" and inst.get("InstanceLifecycle") == "spot"
    assert (tags["finops-job-id"], tags["finops-attempt"], tags["finops-dag-id"], tags["finops-run-id"]) == (
        job_id,
        "2",
        "dag",
        "r1",
    )
    assert tags["finops-checkpoint"] == "s3://ckpts/jobs/gpu-job"
    script = base64.b64decode(
        ec2.describe_instance_attribute(InstanceId=spot_id, Attribute="userData")["UserData"]["Value"]
    ).decode()
    assert "export FINOPS_JOB_ATTEMPT=2\n" in script and "export FINOPS_PROVIDER=aws\n" in script
    assert "'3e-4; rm -rf /'" in script  # the hostile argument stays one quoted word
    assert f"--store-exit exits/{tags['finops-launch']} --" in script and script.endswith("shutdown -h now\n")

    ec2.terminate_instances(InstanceIds=[spot_id])  # the spot reclaim: no exit code reported
    event = _event(d.value.trigger)
    assert (event["kind"], event["status"]) == ("ended", "gone")
    with pytest.raises(TaskDeferred) as d2:
        op.execute_complete(ctx, event=event)
    od_id = d2.value.trigger.watch["instance_id"]
    od = ec2.describe_instances(InstanceIds=[od_id])["Reservations"][0]["Instances"][0]
    assert od["InstanceType"] == "g5.xlarge" and "InstanceLifecycle" not in od
    od_tags = {t["Key"]: t["Value"] for t in od["Tags"]}
    # the job ends on its own: the wrapper stores its exit code, the instance powers off
    s3.put_object(Bucket="ckpts", Key=f"jobs/gpu-job/exits/{od_tags['finops-launch']}", Body=b"0")
    ec2.terminate_instances(InstanceIds=[od_id])
    event = _event(d2.value.trigger)
    assert event["status"] == "exited:0"
    result = op.execute_complete(ctx, event=event)
    assert result["state"] == "finished"

    wh = connect()
    try:
        store = JobStore(wh)
        job, attempts = store.get_job(job_id), store.attempts(job_id)
    finally:
        wh.close()
    assert [(a.instance_type, a.pricing_model, a.outcome) for a in attempts] == [
        ("p5.48xlarge", "spot", "capacity"),
        ("g5.xlarge", "spot", "preempted"),
        ("g5.xlarge", "ondemand", "finished"),
    ]
    assert attempts[0].end_reason.startswith("InsufficientInstanceCapacity: We currently do not have")
    assert "1 spot preemptions reached the limit (1)" in attempts[2].plan_table
    assert job.state == "finished" and job.spot_preemptions == 1 and job.estimated_cost_usd >= Decimal(0)
    assert AwsJobProvider("us-east-1", ami).find(job_id) == []


def test_user_data_quotes_everything_and_reports_a_failed_bootstrap():
    spec = parse_job_spec(_spec())
    script = user_data(spec, 3, "amp_bf16", "tok")
    assert script.startswith("#!/bin/bash\nset -u\n")
    assert (
        "pip install x || { python3 -c " in script and " exits/tok 97; shutdown -h now; exit 1; }" in script
    )
    assert (
        "python3 -m finops.jobs.local_wrap --store-exit exits/tok -- python3 -m train.main --lr '3e-4; rm -rf /'"
        in script
    )
