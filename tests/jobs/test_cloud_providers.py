"""The gcp, azure and lambda job providers through the operator and trigger against local
HTTP servers speaking the Compute Engine, ARM and Lambda Cloud API shapes
(tests/fixtures/job_clouds.py): capacity errors moving to the next candidate, a Spot
preemption / eviction noticed and the job moved, the job's own exit code read from the
checkpoint store, every VM deleted at the end and on failure paths, hostile run ids in labels."""

from __future__ import annotations

import asyncio
import json
import re
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import TaskDeferred
from airflow.sdk.module_loading import import_string
from hypothesis import given, settings

from finops.demo.emulators import conn_env_var, lambda_connection
from finops.jobs.clouds import azure_tags, gcp_labels, instance_name, lambda_tags
from finops.jobs.executor import job_id_for, provider_from_config
from finops.jobs.operator import TrainingJobOperator
from finops.jobs.planner import Candidate, PlanSettings
from finops.jobs.spec import parse_job_spec
from finops.jobs.store import JobStore
from finops.jobs.stores import open_store
from finops.warehouse import connect
from tests.fixtures.hostile import hostile_text
from tests.fixtures.job_clouds import LAMBDA_KEY

HOSTILE_RUN = "manual__2026-11-26T01:50:17+00:00 Ünï'\"<b>;$(rm -rf /)\n=SUM(1)"
GCP_LABEL = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def _spec(ckpt: Path) -> dict:
    return {
        "name": "gpu-job", "team": "ml", "project": "p", "steps": 1000,
        "run": {"module": "train.main", "args": ["--lr", "3e-4; rm -rf /"]},
        "step_profile": {"measured": [{"gpu_model": "L4", "precision": "fp32", "step_ms": 500},
                                      {"gpu_model": "H100", "precision": "fp32", "step_ms": 20}]},
        "checkpoint_uri": str(ckpt), "checkpoint_every_steps": 100, "max_spot_preemptions": 1,
    }  # fmt: skip


def _cand(provider, region, itype, model, price, gpu):
    return {"provider": provider, "region": region, "instance_type": itype, "pricing_model": model,
            "price_per_hour": price, "gpu_model": gpu, "gpu_memory_gib": 24,
            "interruption_rate_per_h": 0.05}  # fmt: skip


def _op(spec, cands, provider) -> TrainingJobOperator:
    return TrainingJobOperator(task_id="train", spec=spec, candidates=cands, dry_run=False, poll_s=0.01, retries=0,
                               provider=provider, plan_settings=PlanSettings(restart_overhead_h=0.0))  # fmt: skip


def _ctx(run_id=HOSTILE_RUN):
    return {"ti": SimpleNamespace(dag_id="dag", run_id=run_id, task_id="train", map_index=-1, try_number=1)}


def _event(trigger):
    path, kwargs = trigger.serialize()
    trig = import_string(path)(**json.loads(json.dumps(kwargs)))  # as the triggerer rebuilds it

    async def first():
        async for ev in trig.run():
            return ev.payload

    return asyncio.run(first())


def _attempts(job_id):
    wh = connect()
    try:
        store = JobStore(wh)
        return store.get_job(job_id), store.attempts(job_id)
    finally:
        wh.close()


def test_gcp_capacity_spot_preemption_fallback_and_exit(finops_home, gcp_compute, tmp_path, caplog):
    ckpt = tmp_path / "ckpt"
    provider = {"kind": "gcp", "project": "jobs-proj", "base_url": gcp_compute.base, "zones": {"us-central1": "us-central1-a"},
                "image": "projects/deeplearning-platform-release/global/images/family/pytorch-latest-cu124"}  # fmt: skip
    gcp_compute.no_capacity.add("a3-highgpu-1g")
    cands = [_cand("gcp", "us-central1", "a3-highgpu-1g", "spot", "3", "H100"),
             _cand("gcp", "us-central1", "g2-standard-4", "spot", "0.30", "L4"),
             _cand("gcp", "us-central1", "g2-standard-4", "ondemand", "0.71", "L4"),
             _cand("gcp", "europe-west9", "g2-standard-4", "spot", "0.01", "L4")]  # fmt: skip
    op, ctx = _op(_spec(ckpt), cands, provider), _ctx()
    with pytest.raises(TaskDeferred) as d:
        op.execute(ctx)
    spot_id = d.value.trigger.watch["instance_id"]
    zone, name = spot_id.split("/")
    job_id = job_id_for("dag", HOSTILE_RUN, "train")
    assert (zone, name) == ("us-central1-a", f"finops-{job_id}-a3")
    vm = gcp_compute.instances[name]
    assert vm["scheduling"]["provisioningModel"] == "SPOT"
    assert vm["scheduling"]["instanceTerminationAction"] == "DELETE" and vm["scheduling"]["maxRunDuration"]
    labels = vm["labels"]
    assert (labels["finops-job-id"], labels["finops-attempt"], labels["finops-dag-id"]) == (
        job_id,
        "3",
        "dag",
    )
    assert all(GCP_LABEL.match(k) and re.fullmatch(r"[a-z0-9_-]{0,63}", v) for k, v in labels.items())
    assert labels["finops-run-id"] == "manual__2026-11-26t01-50-17-00-00--n----b----rm--rf-----sum-1-"
    meta = {i["key"]: i["value"] for i in vm["metadata"]["items"]}
    assert meta["finops-checkpoint"] == str(ckpt) and meta["finops-launch"] == labels["finops-launch"]
    assert "export FINOPS_PROVIDER=gcp\n" in meta["startup-script"]
    assert "'3e-4; rm -rf /'" in meta["startup-script"]
    assert [req for req, _ in gcp_compute.inserts][0] != [req for req, _ in gcp_compute.inserts][1]

    gcp_compute.preempt(name, delete=False)  # stopped with a preempted operation
    event = _event(d.value.trigger)
    assert (event["kind"], event["status"]) == ("ended", "gone")
    assert name in gcp_compute.deleted  # a stopped VM bills its disk: deleted when seen
    assert any("was preempted (operation" in r.getMessage() for r in caplog.records)  # the preemption op
    with pytest.raises(TaskDeferred) as d2:
        op.execute_complete(ctx, event=event)
    od_name = d2.value.trigger.watch["instance_id"].split("/")[1]
    od = gcp_compute.instances[od_name]
    assert od["scheduling"]["provisioningModel"] == "STANDARD" and od_name.endswith("-a4")

    open_store(str(ckpt)).put(f"exits/{od['labels']['finops-launch']}", b"0")  # the job ends on its own
    od["status"] = "TERMINATED"  # its startup script powered the VM off
    event = _event(d2.value.trigger)
    assert event["status"] == "exited:0" and od_name in gcp_compute.deleted
    assert op.execute_complete(ctx, event=event)["state"] == "finished"

    job, attempts = _attempts(job_id)
    assert [(a.region, a.instance_type, a.pricing_model, a.outcome) for a in attempts] == [
        ("europe-west9", "g2-standard-4", "spot", "capacity"),  # no zone configured there
        ("us-central1", "a3-highgpu-1g", "spot", "capacity"),
        ("us-central1", "g2-standard-4", "spot", "preempted"),
        ("us-central1", "g2-standard-4", "ondemand", "finished"),
    ]
    assert attempts[1].end_reason.startswith("ZONE_RESOURCE_POOL_EXHAUSTED: The zone")
    assert "no zone configured" in attempts[0].end_reason
    assert job.state == "finished" and job.spot_preemptions == 1
    assert gcp_compute.instances == {} and provider_from_config(provider).find(job_id) == []


def test_gcp_retry_adopts_and_teardown_deletes(finops_home, gcp_compute, tmp_path):
    provider = {"kind": "gcp", "project": "jobs-proj", "base_url": gcp_compute.base, "image": "img",
                "zones": {"us-central1": "us-central1-b"}}  # fmt: skip
    cands = [_cand("gcp", "us-central1", "g2-standard-4", "spot", "0.30", "L4")]
    op, ctx = _op(_spec(tmp_path / "c"), cands, provider), _ctx("r1")
    with pytest.raises(TaskDeferred):
        op.execute(ctx)
    retry = {"ti": SimpleNamespace(dag_id="dag", run_id="r1", task_id="train", map_index=-1, try_number=2)}
    with pytest.raises(TaskDeferred) as d:
        op.execute(retry)  # an Airflow retry adopts the running VM
    assert len(gcp_compute.inserts) == 1 and list(gcp_compute.instances) == [
        d.value.trigger.watch["instance_id"].split("/")[1]
    ]
    # the insert returned 409 (a retried launch after a lost reply): the VM is adopted, not doubled
    p = provider_from_config(provider)
    cand = Candidate("gcp", "us-central1", "g2-standard-4", "spot", Decimal("0.3"))
    tags = {"finops-job-id": job_id_for("dag", "r1", "train"), "finops-attempt": "1"}
    assert (
        p.start(parse_job_spec(_spec(tmp_path / "c")), 1, "fp32", cand, tags)
        == d.value.trigger.watch["instance_id"]
    )
    op.on_kill()  # the worker kills the task: the job's VMs are found by label and deleted
    assert gcp_compute.instances == {}


def test_azure_capacity_both_ways_eviction_fallback_and_exit(finops_home, azure_compute, tmp_path):
    ckpt = tmp_path / "ckpt"
    provider = {"kind": "azure", "subscription_id": "0000-sub", "resource_group": "jobs-rg", "base_url": azure_compute.base,
                "subnet_id": "/subscriptions/0000-sub/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vn/subnets/default",
                "ssh_public_key": "ssh-ed25519 AAAAC3Nza finops", "poll_s": 0, "create_wait_s": 5,
                "image_reference": {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}}  # fmt: skip
    azure_compute.no_capacity_sync.add("Standard_NC40ads_H100_v5")
    azure_compute.no_capacity_async.add("Standard_NC24ads_A100_v4")
    cands = [_cand("azure", "eastus", "Standard_NC40ads_H100_v5", "spot", "2", "H100"),
             _cand("azure", "eastus", "Standard_NC24ads_A100_v4", "spot", "2.5", "H100"),
             _cand("azure", "eastus", "Standard_NV36ads_A10_v5", "spot", "0.30", "L4"),
             _cand("azure", "eastus", "Standard_NV36ads_A10_v5", "ondemand", "0.90", "L4")]  # fmt: skip
    op, ctx = _op(_spec(ckpt), cands, provider), _ctx()
    with pytest.raises(TaskDeferred) as d:
        op.execute(ctx)
    name = d.value.trigger.watch["instance_id"]
    job_id = job_id_for("dag", HOSTILE_RUN, "train")
    assert name == f"finops-{job_id}-a3" and azure_compute.deleted == [f"finops-{job_id}-a2"]  # the failed VM
    vm = azure_compute.vms[name]
    props = vm["properties"]
    assert (props["priority"], props["evictionPolicy"], props["billingProfile"]) == (
        "Spot",
        "Delete",
        {"maxPrice": -1},
    )
    tags = vm["tags"]
    assert (tags["finops-job-id"], tags["finops-attempt"], tags["finops-dag-id"]) == (job_id, "3", "dag")
    assert tags["finops-run-id"] == HOSTILE_RUN.replace("\n", " ") and tags["finops-checkpoint"] == str(ckpt)
    assert all(not set(k) & set("<>%&\\?/") for k in tags)

    azure_compute.evict(name)  # evictionPolicy Delete: the VM is gone
    event = _event(d.value.trigger)
    assert event["status"] == "gone"
    with pytest.raises(TaskDeferred) as d2:
        op.execute_complete(ctx, event=event)
    od = d2.value.trigger.watch["instance_id"]
    assert "priority" not in azure_compute.vms[od]["properties"]
    open_store(str(ckpt)).put(f"exits/{azure_compute.vms[od]['tags']['finops-launch']}", b"0")
    azure_compute.vms[od]["_power"] = "stopped"  # the OS powered off: stopped, still allocated
    event = _event(d2.value.trigger)
    assert event["status"] == "exited:0" and od in azure_compute.deleted
    assert op.execute_complete(ctx, event=event)["state"] == "finished"

    job, attempts = _attempts(job_id)
    assert [(a.instance_type, a.pricing_model, a.outcome) for a in attempts] == [
        ("Standard_NC40ads_H100_v5", "spot", "capacity"),
        ("Standard_NC24ads_A100_v4", "spot", "capacity"),
        ("Standard_NV36ads_A10_v5", "spot", "preempted"),
        ("Standard_NV36ads_A10_v5", "ondemand", "finished"),
    ]
    assert attempts[0].end_reason.startswith("SkuNotAvailable:")
    assert "ProvisioningState/failed/AllocationFailed" in attempts[1].end_reason
    assert azure_compute.vms == {} and job.state == "finished"


def test_lambda_no_spot_capacity_exit_and_teardown_after_a_failed_launch(
    finops_home, lambda_compute, tmp_path, monkeypatch
):
    host, port = lambda_compute.base.removeprefix("http://").rstrip("/").split(":")
    monkeypatch.setenv(
        conn_env_var("lambda_jobs"), json.dumps(lambda_connection(host, int(port), LAMBDA_KEY))
    )
    ckpt = tmp_path / "ckpt"
    provider = {"kind": "lambda", "ssh_key_name": "ops", "conn_id": "lambda_jobs"}
    lambda_compute.no_capacity.add("gpu_1x_h100_sxm5")
    cands = [_cand("lambda", "us-west-1", "gpu_1x_a10", "spot", "0.10", "L4"),  # Lambda has no spot
             _cand("lambda", "us-west-1", "gpu_1x_h100_sxm5", "ondemand", "3.29", "H100"),
             _cand("lambda", "us-west-1", "gpu_1x_a10", "ondemand", "0.75", "L4")]  # fmt: skip
    op, ctx = _op(_spec(ckpt), cands, provider), _ctx()
    with pytest.raises(TaskDeferred) as d:
        op.execute(ctx)
    iid = d.value.trigger.watch["instance_id"]
    job_id = job_id_for("dag", HOSTILE_RUN, "train")
    body = lambda_compute.launches[-1]
    assert (
        lambda_compute.instances[iid]["name"] == body["name"] == f"finops-{job_id}-a3"
        and body["instance_type_name"] == "gpu_1x_a10"
    )
    assert "export FINOPS_PROVIDER=lambda\n" in body["user_data"]
    tags = {t["key"]: t["value"] for t in body["tags"]}
    assert (tags["finops-job-id"], tags["finops-attempt"], tags["finops-dag-id"]) == (job_id, "3", "dag")
    assert all(
        re.fullmatch(r"[A-Za-z0-9_.:=-]*", t["key"] + t["value"])
        for t in body["tags"]
        if t["key"] != "finops-checkpoint"
    )
    open_store(str(ckpt)).put(f"exits/{tags['finops-launch']}", b"0")
    event = _event(d.value.trigger)
    assert (
        event["status"] == "exited:0" and lambda_compute.alive() == []
    )  # a powered-off instance still bills
    assert op.execute_complete(ctx, event=event)["state"] == "finished"
    _, attempts = _attempts(job_id)
    assert [(a.pricing_model, a.outcome) for a in attempts] == [
        ("spot", "capacity"),
        ("ondemand", "capacity"),
        ("ondemand", "finished"),
    ]
    assert attempts[1].end_reason.startswith("instance-operations/launch/insufficient-capacity:")

    # a launch that created the instance and then failed: cleaned up, the job torn down
    lambda_compute.fail_after_create = 1
    op2, ctx2 = _op(_spec(tmp_path / "ckpt2"), cands[2:], provider), _ctx("r2")
    with pytest.raises(Exception, match="Internal server error"):
        op2.execute(ctx2)
    assert lambda_compute.alive() == []
    job2, attempts2 = _attempts(job_id_for("dag", "r2", "train"))
    assert job2.state == "failed" and attempts2[0].outcome == "torn_down"


@settings(max_examples=60, deadline=None)
@given(key=hostile_text(6), value=hostile_text())
def test_labels_and_tags_keep_each_clouds_alphabet(key, value):
    labels = gcp_labels({key: value, "finops-run-id": value})
    assert all(GCP_LABEL.match(k) and re.fullmatch(r"[a-z0-9_-]{0,63}", v) for k, v in labels.items())
    for k, v in azure_tags({key: value}).items():
        assert 0 < len(k) <= 512 and len(v) <= 256 and not set(k) & set("<>%&\\?/")
        assert not re.search(r"[\x00-\x1f\x7f]", k + v)
    for t in lambda_tags({key: value}):
        assert re.fullmatch(r"[A-Za-z0-9_.:=-]{1,55}", t["key"]) and re.fullmatch(
            r"[A-Za-z0-9_.:=-]{0,255}", t["value"]
        )
    name = instance_name({"finops-job-id": key}, "job", 12)
    assert re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", name) and len(name) <= 63 and name.endswith("-a12")


def test_azure_status_reads_power_state_not_only_provisioning(azure_compute):
    p = provider_from_config({"kind": "azure", "subscription_id": "0000-sub", "resource_group": "jobs-rg",
                              "subnet_id": "/s", "ssh_public_key": "k", "base_url": azure_compute.base})  # fmt: skip
    base = {"location": "eastus", "tags": {"finops-job-id": "job-1"}}
    azure_compute.vms["vm-a"] = base | {
        "name": "vm-a",
        "properties": {"provisioningState": "Failed"},
        "_power": "running",
    }
    azure_compute.vms["vm-b"] = base | {"name": "vm-b", "properties": {"provisioningState": "Succeeded"},
                                        "_power": "deallocated"}  # fmt: skip
    # a failed extension leaves a running VM `Failed`: still running; an evicted (deallocated) one is gone
    assert (p.status("vm-a"), p.status("vm-b")) == ("running", "gone")
    assert azure_compute.deleted == ["vm-b"] and [i for i, _ in p.find("job-1")] == ["vm-a"]


def test_gcp_provider_authenticates_through_its_airflow_connection(
    gcp_compute, httpserver, monkeypatch, gcp_service_account
):
    """The provider rebuilt from its config (as the triggerer does) gets its token from the
    google_cloud_platform connection (service-account key -> OAuth token endpoint)."""
    httpserver.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "tok-jobs", "expires_in": 3600, "token_type": "Bearer"}
    )
    key = {**gcp_service_account, "token_uri": httpserver.url_for("/token")}
    extra = {"keyfile_dict": json.dumps(key), "scope": "https://www.googleapis.com/auth/cloud-platform"}
    monkeypatch.setenv(
        conn_env_var("gcp_jobs"), json.dumps({"conn_type": "google_cloud_platform", "extra": extra})
    )
    gcp_compute.token = "tok-jobs"
    gcp_compute.instances["vm-1"] = {"name": "vm-1", "status": "RUNNING", "labels": {"finops-job-id": "job-1"},
                                     "zone": "https://www.googleapis.com/compute/v1/projects/jobs-proj/zones/z-a"}  # fmt: skip
    cfg = {
        "kind": "gcp",
        "project": "jobs-proj",
        "image": "img",
        "base_url": gcp_compute.base,
        "conn_id": "gcp_jobs",
    }
    p = provider_from_config(json.loads(json.dumps(provider_from_config(cfg).config())))
    assert p.find("job-1") == [("z-a/vm-1", {"finops-job-id": "job-1"})]
    gcp_compute.token = "other"
    with pytest.raises(Exception, match="401"):
        p.find("job-1")
