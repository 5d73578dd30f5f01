"""Lambda Cloud, GCP Compute and Azure ARM launchers against local HTTP servers speaking the
documented request / response shapes, with 429 + Retry-After, 5xx and failures after create."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from werkzeug.wrappers import Response

from finops.gpubench import lifecycle
from finops.gpubench.launchers.azure import AzureLauncher
from finops.gpubench.launchers.base import LaunchError, LaunchSpec
from finops.gpubench.launchers.gcp import GcpLauncher
from finops.gpubench.launchers.lambda_cloud import LambdaLauncher, parse_name
from finops.gpubench.launchers.rest import RestClient
from finops.gpubench.settings import parse_settings

NOW = datetime(2026, 11, 16, 6, 0, tzinfo=UTC)


def _settings(target: dict):
    return parse_settings({"ttl_minutes": 30, "serving": False, "targets": [target]})  # inline bundle


def _spec(settings, run="manual__1", now=NOW) -> tuple[dict, LaunchSpec]:
    targets, _ = lifecycle.plan(settings)
    p = lifecycle.prepare(settings, targets[0], run, now=now)
    t = targets[0]
    return p, LaunchSpec(
        p["bench_run_id"],
        "finops_gpu_benchmark",
        run,
        t["region"],
        t["instance_type"],
        t["pricing_model"],
        "#!/bin/bash\necho bench",
        now + timedelta(minutes=30),
        30,
    )


LAMBDA_TARGET = {
    "provider": "lambda",
    "region": "us-west-1",
    "instance_type": "gpu_1x_h100_sxm5",
    "ssh_key_name": "ops",
}


def _lambda(api, sleeps):
    settings = _settings(LAMBDA_TARGET)
    client = RestClient(api.server.url_for("/"), "secret-key", sleep=sleeps.append, backoff_s=0.5)
    return settings, LambdaLauncher(client, settings.targets[0], max_running=2)


def test_lambda_launch_find_terminate(bench_lambda_api):
    sleeps: list[float] = []
    settings, ln = _lambda(bench_lambda_api, sleeps)
    prepared, spec = _spec(settings)
    bench_lambda_api.rate_limit_next = 1
    [iid] = ln.launch(spec)
    assert sleeps == [2.0]  # waited what Retry-After said
    body = bench_lambda_api.launch_bodies[0]
    assert body["region_name"] == "us-west-1" and body["instance_type_name"] == "gpu_1x_h100_sxm5"
    assert (
        body["ssh_key_names"] == ["ops"]
        and body["quantity"] == 1
        and body["user_data"].startswith("#!/bin/bash")
    )
    assert parse_name(body["name"]) == (spec.bench_run_id, datetime(2026, 11, 16, 6, 30, tzinfo=UTC))
    assert {"key": "finops-benchmark", "value": "true"} in body["tags"]
    assert ln.launch(spec) == [iid]  # a retried task finds it instead of launching twice
    [found] = ln.find(spec.bench_run_id)
    assert (found.instance_id, found.region, found.expires_at) == (iid, "us-west-1", spec.expires_at)
    bench_lambda_api.fail_terminate = 1
    rep = lifecycle.terminate(prepared, ln, dry_run=False, wh=None, poll_s=0.01, sleep=lambda s: None)
    assert rep.terminated == [iid] and bench_lambda_api.alive() == []


def test_lambda_launch_error_after_create_cleans_up(bench_lambda_api):
    settings, ln = _lambda(bench_lambda_api, [])
    _, spec = _spec(settings)
    bench_lambda_api.fail_after_create = 1
    with pytest.raises(LaunchError, match="Internal server error") as err:
        ln.launch(spec)
    assert err.value.cleaned
    assert len(bench_lambda_api.launch_bodies) == 1  # a failed POST launch is never blindly retried
    assert bench_lambda_api.alive() == []


def test_lambda_bad_key_is_reported(bench_lambda_api):
    settings = _settings(LAMBDA_TARGET)
    ln = LambdaLauncher(RestClient(bench_lambda_api.server.url_for("/"), "wrong"), settings.targets[0])
    with pytest.raises(Exception, match="401.*API key was invalid"):
        ln.find()


def test_reaper_terminates_only_expired_lambda_instances(bench_lambda_api, duckdb_wh):
    settings, ln = _lambda(bench_lambda_api, [])
    ln.max_running = 10
    _, old = _spec(settings, run="old", now=NOW - timedelta(hours=3))
    _, fresh = _spec(settings, run="fresh", now=datetime.now(UTC))
    [old_id] = ln.launch(old)
    [fresh_id] = ln.launch(fresh)
    bench_lambda_api.instances["someone-elses"] = {
        "id": "someone-elses",
        "name": "training-run",
        "status": "active",
        "region": {"name": "us-west-1"},
    }
    dry = lifecycle.reap([ln], dry_run=True, wh=duckdb_wh, run_id="r")
    assert dry["expired"] == [f"lambda:us-west-1:{old_id}"] and dry["terminated"] == []
    assert sorted(bench_lambda_api.alive()) == sorted([old_id, fresh_id, "someone-elses"])
    real = lifecycle.reap([ln], dry_run=False, wh=duckdb_wh, run_id="r")
    assert real["terminated"] == [f"lambda:us-west-1:{old_id}"] and real["kept"] == 1
    assert sorted(bench_lambda_api.alive()) == sorted([fresh_id, "someone-elses"])
    assert duckdb_wh.query(
        "SELECT result, dry_run FROM policy_actions WHERE action = 'reap' ORDER BY dry_run"
    ) == [("ok", False), ("dry_run", True)]


def test_reaper_counts_an_instance_once_when_two_launchers_list_it(bench_lambda_api, duckdb_wh):
    """The reaper builds one launcher per configured (cloud, connection, region ...); Lambda lists
    every region's instances (as GCP lists a whole project, Azure a resource group), so an expired
    instance came back from each: reaped twice, audited twice, counted twice against the cap."""
    settings, west = _lambda(bench_lambda_api, [])
    east_target = settings.targets[0].model_copy(update={"region": "us-east-1"})
    east = LambdaLauncher(west.api, east_target, max_running=10)
    west.max_running = 10
    _, old = _spec(settings, run="old", now=NOW - timedelta(hours=3))
    _, fresh = _spec(settings, run="fresh", now=datetime.now(UTC))
    [old_id] = west.launch(old)
    west.launch(fresh)
    rep = lifecycle.reap([west, east], dry_run=False, wh=duckdb_wh, run_id="r", cap=1)
    assert rep["expired"] == rep["terminated"] == [f"lambda:us-west-1:{old_id}"]
    assert rep["kept"] == 1 and rep["capped"] == [] and not rep["errors"]
    assert duckdb_wh.query("SELECT resource_id, result FROM policy_actions WHERE action = 'reap'") == [
        (old_id, "ok")
    ]


# -- GCP ---------------------------------------------------------------------------------------

GCP_TARGET = {
    "provider": "gcp",
    "region": "us-central1",
    "zone": "us-central1-a",
    "project": "bench-proj",
    "instance_type": "a3-highgpu-1g",
    "pricing_model": "spot",
    "image": "projects/deeplearning-platform-release/global/images/family/pytorch-latest-cu124",
}


@pytest.fixture
def gcp_api(httpserver):
    state: dict = {"instances": {}, "inserts": [], "fail_list_once": True}
    base = "/compute/v1/projects/bench-proj"

    def op(name):
        return Response(
            json.dumps({"kind": "compute#operation", "name": f"operation-{name}", "status": "RUNNING"}),
            content_type="application/json",
        )

    def insert(request):
        body = request.get_json()
        state["inserts"].append((request.args.get("requestId"), body))
        state["instances"][body["name"]] = body | {"status": "PROVISIONING", "zone": "us-central1-a"}
        return op(body["name"])

    def aggregated(request):
        if state["fail_list_once"]:  # a transient 503 on an idempotent GET is retried
            state["fail_list_once"] = False
            return Response("backend error", status=503)
        want = dict(part.split("=") for part in request.args["filter"].replace("labels.", "").split(" AND "))
        hits = [
            i for i in state["instances"].values() if all(i["labels"].get(k) == v for k, v in want.items())
        ]
        page = int(request.args.get("pageToken") or 0)  # one instance per page: exercises paging
        body: dict = {"items": {"zones/us-central1-a": {"instances": hits[page : page + 1]}}}
        if page + 1 < len(hits):
            body["nextPageToken"] = str(page + 1)
        return Response(json.dumps(body), content_type="application/json")

    def delete(request):
        name = request.path.rsplit("/", 1)[-1]
        if state["instances"].pop(name, None) is None:
            return Response(json.dumps({"error": {"code": 404, "message": "not found"}}), status=404)
        return op(name)

    httpserver.expect_request(f"{base}/zones/us-central1-a/instances", method="POST").respond_with_handler(
        insert
    )
    httpserver.expect_request(f"{base}/aggregated/instances", method="GET").respond_with_handler(aggregated)
    import re

    httpserver.expect_request(
        re.compile(rf"{base}/zones/us-central1-a/instances/.+"), method="DELETE"
    ).respond_with_handler(delete)
    state["base"] = httpserver.url_for("/compute/v1")
    return state


def test_gcp_insert_find_delete(gcp_api):
    settings = _settings(GCP_TARGET)
    ln = GcpLauncher(RestClient(gcp_api["base"], "tok", sleep=lambda s: None), settings.targets[0])
    prepared, spec = _spec(settings)
    [iid] = ln.launch(spec)
    request_id, body = gcp_api["inserts"][0]
    assert request_id and len(request_id) == 36  # UUID requestId: a retried insert is idempotent
    assert body["scheduling"] == {
        "provisioningModel": "SPOT",
        "instanceTerminationAction": "DELETE",
        "maxRunDuration": {"seconds": "1800"},
        "onHostMaintenance": "TERMINATE",
        "automaticRestart": False,
    }
    assert body["metadata"]["items"] == [{"key": "startup-script", "value": "#!/bin/bash\necho bench"}]
    assert body["labels"]["finops-benchmark"] == "true"
    assert body["labels"]["finops-expires-at"] == str(int(spec.expires_at.timestamp()))
    _, other = _spec(settings, run="manual__2")
    ln.launch(other)
    assert len(ln.find()) == 2  # two pages
    [mine] = ln.find(spec.bench_run_id)
    assert mine.instance_id == iid and mine.expires_at == spec.expires_at
    rep = lifecycle.terminate(prepared, ln, dry_run=False, wh=None, poll_s=0.01, sleep=lambda s: None)
    assert rep.terminated == [iid] and [i.bench_run_id for i in ln.find()] == [other.bench_run_id]


# -- Azure -------------------------------------------------------------------------------------

AZ_TARGET = {
    "provider": "azure",
    "region": "eastus",
    "instance_type": "Standard_NC40ads_H100_v5",
    "pricing_model": "spot",
    "subscription_id": "0000-sub",
    "resource_group": "bench-rg",
    "subnet_id": "/subscriptions/0000-sub/resourceGroups/net/providers/Microsoft.Network/"
    "virtualNetworks/vn/subnets/default",
    "ssh_public_key": "ssh-ed25519 AAAAC3Nza finops",
    "identity_id": "/subscriptions/0000-sub/id",
    "image_reference": {
        "publisher": "microsoft-dsvm",
        "offer": "ubuntu-hpc",
        "sku": "2204",
        "version": "latest",
    },
}


@pytest.fixture
def azure_api(httpserver):
    import re

    state: dict = {"vms": {}, "puts": []}
    vms = "/subscriptions/0000-sub/resourceGroups/bench-rg/providers/Microsoft.Compute/virtualMachines"

    def put(request):
        name = request.path.rsplit("/", 1)[-1]
        body = request.get_json()
        state["puts"].append((request.args.get("api-version"), body))
        state["vms"][name] = {
            "name": name,
            "location": body["location"],
            "tags": body["tags"],
            "properties": {"provisioningState": "Creating"},
        }
        return Response(json.dumps(state["vms"][name]), status=201, content_type="application/json")

    def listing(request):
        names = sorted(state["vms"])
        skip = int(request.args.get("$skiptoken") or 0)
        body: dict = {"value": [state["vms"][n] for n in names[skip : skip + 1]]}
        if skip + 1 < len(names):
            body["nextLink"] = httpserver.url_for(vms) + f"?api-version=2024-07-01&$skiptoken={skip + 1}"
        return Response(json.dumps(body), content_type="application/json")

    def delete(request):
        assert request.args.get("forceDeletion") == "true"
        state["vms"].pop(request.path.rsplit("/", 1)[-1], None)
        return Response("", status=202)

    httpserver.expect_request(vms, method="GET").respond_with_handler(listing)
    httpserver.expect_request(re.compile(rf"{vms}/.+"), method="PUT").respond_with_handler(put)
    httpserver.expect_request(re.compile(rf"{vms}/.+"), method="DELETE").respond_with_handler(delete)
    state["base"] = httpserver.url_for("/")
    return state


def test_azure_create_find_delete(azure_api):
    settings = _settings(AZ_TARGET)
    ln = AzureLauncher(RestClient(azure_api["base"], "tok", sleep=lambda s: None), settings.targets[0])
    prepared, spec = _spec(settings)
    [name] = ln.launch(spec)
    version, body = azure_api["puts"][0]
    props = body["properties"]
    assert version == "2024-07-01" and body["location"] == "eastus"
    assert base64.b64decode(props["osProfile"]["customData"]).decode() == spec.user_data
    assert (props["priority"], props["evictionPolicy"]) == ("Spot", "Delete")
    assert props["storageProfile"]["osDisk"]["deleteOption"] == "Delete"
    assert (
        props["networkProfile"]["networkInterfaceConfigurations"][0]["properties"]["deleteOption"] == "Delete"
    )
    assert body["tags"]["finops:bench-run-id"] == spec.bench_run_id
    assert body["identity"]["type"] == "UserAssigned"
    azure_api["vms"]["someone-elses"] = {"name": "someone-elses", "location": "eastus", "tags": {}}
    _, other = _spec(settings, run="manual__2")
    ln.launch(other)
    assert sorted(i.bench_run_id for i in ln.find()) == sorted(
        [spec.bench_run_id, other.bench_run_id]
    )  # 3 pages
    rep = lifecycle.terminate(prepared, ln, dry_run=False, wh=None, poll_s=0.01, sleep=lambda s: None)
    assert rep.terminated == [name] and "someone-elses" in azure_api["vms"]


def test_scheduled_dry_reaper_still_ends_what_a_live_run_launched(bench_lambda_api, duckdb_wh):
    """benchmarks.dry_run keeps the scheduled reaper dry, but a manual benchmark run launched for
    real: its expired Lambda instance (powered off, still billed) must not be left running. A
    dry run asked for by hand still ends nothing; an instance we did not launch live is only reported."""
    settings, ln = _lambda(bench_lambda_api, [])
    ln.max_running = 10
    live_prepared, _ = _spec(settings, run="manual__live", now=NOW - timedelta(hours=3))
    out = lifecycle.launch(
        live_prepared,
        settings,
        ln,
        dry_run=False,
        wh=duckdb_wh,
        presign=lambda uri, seconds: f"https://results.example/put?expires={seconds}",
    )
    [live_id] = out["instance_ids"]
    _, other = _spec(settings, run="manual__other", now=NOW - timedelta(hours=3))
    [other_id] = ln.launch(other)  # tagged and expired, but no live launch in the audit log

    by_hand = lifecycle.reap([ln], dry_run=True, wh=duckdb_wh, run_id="manual")
    assert by_hand["terminated"] == [] and sorted(bench_lambda_api.alive()) == sorted([live_id, other_id])
    safety_net = lifecycle.reap(
        [ln], dry_run=True, wh=duckdb_wh, run_id="scheduled", clean_live_launches=True
    )
    assert safety_net["terminated"] == [f"lambda:us-west-1:{live_id}"]
    assert bench_lambda_api.alive() == [other_id]
    assert duckdb_wh.query(
        "SELECT resource_id, result, dry_run FROM policy_actions WHERE action = 'reap' "
        "AND run_id = 'scheduled' ORDER BY result"
    ) == [(other_id, "dry_run", True), (live_id, "ok", False)]


def test_a_retried_lambda_launch_does_not_adopt_the_instance_its_cleanup_ended(bench_lambda_api, duckdb_wh):
    """The launch POST created the instance and then failed (500): the cleanup terminated it and the
    task retried. Lambda lists a terminated instance as `terminating` for a while, and the retry
    took it for this run's launch: no new instance, a 'launch ok' audit row naming the one being
    ended, and a benchmark left waiting 50 minutes for results that could never come."""
    settings, ln = _lambda(bench_lambda_api, [])
    prepared, _ = _spec(settings)

    def presign(uri: str, seconds: int) -> str:
        return f"https://results.example/put?expires={seconds}"

    bench_lambda_api.fail_after_create = 1
    with pytest.raises(LaunchError):
        lifecycle.launch(prepared, settings, ln, dry_run=False, wh=duckdb_wh, presign=presign)
    [ended] = bench_lambda_api.instances
    bench_lambda_api.instances[ended]["status"] = "terminating"  # as Lambda lists it for a while
    out = lifecycle.launch(prepared, settings, ln, dry_run=False, wh=duckdb_wh, presign=presign)  # the retry
    [fresh] = out["instance_ids"]
    assert fresh != ended and bench_lambda_api.instances[fresh]["status"] == "booting"
    assert len(bench_lambda_api.launch_bodies) == 2
    rows = duckdb_wh.query(
        "SELECT action, result, reason FROM policy_actions WHERE action = 'launch' ORDER BY created_at"
    )
    assert [r[:2] for r in rows] == [("launch", "failed"), ("launch", "ok")] and ended not in rows[1][2]


def test_a_retried_azure_launch_does_not_adopt_a_vm_being_deleted(azure_api):
    """Same on Azure: the VM a failed attempt's cleanup deleted is listed `Deleting` for minutes;
    the retry returned it as launched instead of creating the benchmark VM again."""
    settings = _settings(AZ_TARGET)
    ln = AzureLauncher(RestClient(azure_api["base"], "tok", sleep=lambda s: None), settings.targets[0])
    _, spec = _spec(settings)
    [name] = ln.launch(spec)
    azure_api["vms"][name]["properties"]["provisioningState"] = (
        "Deleting"  # the cleanup's DELETE, in progress
    )
    assert ln.launch(spec) == [name]
    assert len(azure_api["puts"]) == 2  # created again, not adopted
    assert azure_api["vms"][name]["properties"]["provisioningState"] == "Creating"
