"""GCP, Azure and Lambda Cloud against local HTTP servers speaking the documented shapes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from finops.policies.actions.azure import AzureActions
from finops.policies.actions.gcp import GcpActions
from finops.policies.actions.lambda_cloud import LambdaActions
from finops.policies.decide import format_mark
from finops.policies.engine import Cloud, run_policy
from finops.policies.inventory.azure import AzureInventory
from finops.policies.inventory.gcp import GcpInventory
from finops.policies.inventory.lambda_cloud import LambdaInventory
from finops.policies.model import Policy
from tests.fixtures.policies import pol_lambda_policy, pol_points

OWNER = {"owner": "bob", "team": "research"}


def _audit(wh, run_id):
    rows = wh.query(
        "SELECT resource_name, decision, action, result FROM policy_actions WHERE run_id = ?", [run_id]
    )
    return {r[0]: r[1:] for r in rows}


def _gcp_cloud(fake) -> Cloud:
    inv = GcpInventory(fake.project, lambda: "tok", fake.url, fake.url)
    return Cloud(inv, GcpActions(inv))


def test_gcp_flow_marks_stops_and_keeps_missing_metrics(pol_gcp, pol_policy, duckdb_wh, pol_alerts):
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    ids = {
        "idle": pol_gcp.add("idle", "us-central1-a", OWNER),
        "marked": pol_gcp.add("marked", "us-central1-b", {**OWNER, "finops-idle-marked": old}),
        "busy": pol_gcp.add("busy", "us-central1-a", {**OWNER, "finops-idle-marked": old}),
        "nometrics": pol_gcp.add("nometrics", "us-central1-a", OWNER),
        "onegpu": pol_gcp.add("onegpu", "us-central1-a", OWNER),
        "exempt": pol_gcp.add("exempt", "us-central1-b", {**OWNER, "finops-exempt": "yes"}),
    }
    for k in ("idle", "marked", "exempt"):
        pol_gcp.gpu[ids[k]] = [pol_points(1.0, 8.5), pol_points(2.0, 8.5)]
    pol_gcp.gpu[ids["busy"]] = [pol_points(1.0, 8.5), pol_points(60.0, 8.5)]
    pol_gcp.gpu[ids["onegpu"]] = [pol_points(0.0, 8.5)]  # 2 GPUs attached, 1 reports
    pol = pol_policy(scope={"providers": ["gcp"]})
    before = {n: dict(i["labels"]) for n, i in pol_gcp.instances.items()}

    run_policy(pol, _gcp_cloud(pol_gcp), duckdb_wh, run_id="g-dry")
    assert {n: i["labels"] for n, i in pol_gcp.instances.items()} == before
    assert not [c for c in pol_gcp.calls if c[0] == "POST"]

    run_policy(pol, _gcp_cloud(pol_gcp), duckdb_wh, dry_run=False, run_id="g-live")
    a = _audit(duckdb_wh, "g-live")
    assert a["idle"][:2] == ("idle", "mark") and pol_gcp.instances["idle"]["labels"]["finops-idle-marked"]
    assert a["marked"][:2] == ("idle", "stop") and pol_gcp.instances["marked"]["status"] == "TERMINATED"
    assert (
        a["busy"][:2] == ("busy", "unmark")
        and "finops-idle-marked" not in pol_gcp.instances["busy"]["labels"]
    )
    assert a["nometrics"][:2] == ("no_metrics", "none")
    assert a["onegpu"][:2] == ("partial_metrics", "none")
    assert a["exempt"][:2] == ("exempt", "none") and pol_gcp.instances["exempt"]["labels"] == before["exempt"]
    assert pol_gcp.instances["busy"]["status"] == "RUNNING"


def test_gcp_retries_429_and_500_then_pages(pol_gcp):
    pol_gcp.add("a", "europe-west4-a", {})
    pol_gcp.add("b", "us-central1-a", {})
    inv = GcpInventory(pol_gcp.project, None, pol_gcp.url, pol_gcp.url)
    inv.compute.backoff_s = 0.01
    names = sorted(r.name for r in inv.list_resources())
    assert names == ["a", "b"]
    agg = [c for c in pol_gcp.calls if "aggregated" in c[1]]
    assert len(agg) == 4  # 429, 500, page 1, page 2


def _azure_cloud(fake) -> Cloud:
    inv = AzureInventory(fake.sub, lambda: "tok", fake.url)
    return Cloud(inv, AzureActions(inv))


def test_azure_flow_deallocates_after_grace_and_pages(pol_azure, pol_policy, duckdb_wh, pol_alerts):
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    ids = {
        "vm-idle": pol_azure.add("vm-idle", OWNER),
        "vm-marked": pol_azure.add("vm-marked", {**OWNER, "finops-idle-marked": old}),
        "vm-busy": pol_azure.add("vm-busy", OWNER),
        "vm-stopped": pol_azure.add("vm-stopped", OWNER, power="deallocated"),
        "vm-young": pol_azure.add("vm-young", OWNER, age_h=0.2),
    }
    for k in ("vm-idle", "vm-marked", "vm-stopped", "vm-young"):
        pol_azure.gpu[ids[k].lower()] = pol_points(0.5, 8.5)
    pol_azure.gpu[ids["vm-busy"].lower()] = pol_points(lambda i: 50 if i == 40 else 1, 8.5)
    pol = pol_policy(scope={"providers": ["azure"]}, min_age_hours=1)

    run_policy(pol, _azure_cloud(pol_azure), duckdb_wh, dry_run=False, run_id="az")
    a = _audit(duckdb_wh, "az")
    assert set(a) == set(ids)  # 3 pages of nextLink all read
    assert (
        a["vm-idle"][:2] == ("idle", "mark")
        and "finops-idle-marked" in pol_azure.vms[ids["vm-idle"].lower()]["tags"]
    )
    assert a["vm-marked"] == ("idle", "stop", "deallocated: requested; owner notice sent")
    state = pol_azure.vms[ids["vm-marked"].lower()]["properties"]["instanceView"]["statuses"][1]["code"]
    assert state == "PowerState/deallocated"
    assert a["vm-busy"][:2] == ("busy", "none")
    assert a["vm-stopped"][:2] == ("not_running", "none")
    assert a["vm-young"][:2] == ("too_young", "none")
    assert pol_azure.vms[ids["vm-idle"].lower()]["tags"]["owner"] == "bob"  # Merge kept other tags


def _lambda_policy(**over) -> Policy:
    return pol_lambda_policy(**over)


def test_lambda_terminate_only_after_grace_with_opt_in(pol_lambda, duckdb_wh, pol_alerts):
    bad = pol_lambda.add("untagged-8x", {"owner": "carol"})
    good = pol_lambda.add("tagged", {"Team": "ML", "owner": "dan"})
    inv = LambdaInventory("lambda-main", lambda: "secret-key", pol_lambda.url)
    pol = _lambda_policy()
    cloud = Cloud(inv, LambdaActions(inv, allow_terminate=True))
    t0 = datetime.now(UTC)

    run_policy(pol, cloud, duckdb_wh, dry_run=False, now=t0, run_id="l1")
    assert _audit(duckdb_wh, "l1")["untagged-8x"][:2] == ("violation", "mark")
    assert _audit(duckdb_wh, "l1")["tagged"][:2] == ("compliant", "none")
    run_policy(pol, cloud, duckdb_wh, dry_run=False, now=t0 + timedelta(hours=2), run_id="l2")
    assert _audit(duckdb_wh, "l2")["untagged-8x"][1] == "wait"
    assert pol_lambda.instances[bad]["status"] == "active"

    later = t0 + timedelta(hours=25)
    run_policy(pol, cloud, duckdb_wh, dry_run=True, now=later, clock=lambda: later, run_id="l3")
    assert pol_lambda.instances[bad]["status"] == "active"  # dry run
    assert _audit(duckdb_wh, "l3")["untagged-8x"] == (
        "violation",
        "terminate",
        "dry_run: would terminate; owner notice would be sent (dry run: nothing sent)",
    )
    assert not [e for e in pol_alerts if e.facts.get("action") == "terminated"]
    run_policy(pol, cloud, duckdb_wh, dry_run=False, now=later, clock=lambda: later, run_id="l4")
    assert _audit(duckdb_wh, "l4")["untagged-8x"] == (
        "violation",
        "terminate",
        "terminated; owner notice sent",
    )
    assert pol_lambda.instances[bad]["status"] == "terminating"
    assert pol_lambda.instances[good]["status"] == "active"
    assert all(c[2] == "Bearer secret-key" for c in pol_lambda.calls)
    snap = duckdb_wh.query(
        "SELECT resource_id, compliant, team FROM tag_compliance WHERE policy = 'lambda-tags' AND snapshot_date = ?",
        [t0.date()],
    )
    assert sorted(snap) == sorted([(bad, False, None), (good, True, "ML")])


def test_lambda_actions_refuse_without_opt_in(pol_lambda):
    iid = pol_lambda.add("x", {})
    inv = LambdaInventory("l", None, pol_lambda.url)
    assert LambdaActions(inv).stop(inv.list_resources()[0], dry_run=False).startswith("refused")
    assert pol_lambda.instances[iid]["status"] == "active"
    assert not [c for c in pol_lambda.calls if c[0] == "POST"]


def test_lambda_cannot_be_stopped_or_terminated_without_opt_in():
    with pytest.raises(ValueError, match="allow_terminate"):
        _lambda_policy(allow_terminate=False)
    with pytest.raises(ValueError, match="Lambda"):
        _lambda_policy(scope={"providers": ["lambda", "aws"]})


def _lossy(fake, suffix: str, status: int):  # type: ignore[no-untyped-def]
    """The server acts on the first `suffix` call, then its answer is lost (5xx)."""
    from werkzeug import Response

    seen: list[str] = []

    def handler(request):  # type: ignore[no-untyped-def]
        if request.method == "POST" and request.path.endswith(suffix):
            seen.append(request.path)
            fake.handler(request)
            return Response("upstream gone", status=status)
        return fake.handler(request)

    return handler, seen


def test_terminate_is_sent_once_when_its_answer_is_lost(httpserver, duckdb_wh, pol_alerts):
    """A 5xx after the server acted must not repeat the terminate: audited as an error, run fails."""
    import re

    from finops.policies.engine import PolicyRunError
    from tests.fixtures.policies import PolFakeLambda

    fake = PolFakeLambda()
    bad = fake.add("untagged", {"owner": "carol"})
    handler, seen = _lossy(fake, "/instance-operations/terminate", 502)
    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    inv = LambdaInventory("lambda-main", None, httpserver.url_for("/").rstrip("/"))
    inv.api._sleep = lambda s: None
    pol, cloud, t0 = _lambda_policy(), Cloud(inv, LambdaActions(inv, allow_terminate=True)), datetime.now(UTC)
    run_policy(pol, cloud, duckdb_wh, dry_run=False, now=t0, run_id="lost-1")  # marks
    later = t0 + timedelta(hours=25)
    with pytest.raises(PolicyRunError):
        run_policy(pol, cloud, duckdb_wh, dry_run=False, now=later, clock=lambda: later, run_id="lost-2")
    assert len(seen) == 1
    verdict, action, result = _audit(duckdb_wh, "lost-2")["untagged"]
    assert (verdict, action) == ("violation", "terminate") and result.startswith("error:") and "502" in result
    assert fake.instances[bad]["status"] == "terminating"


def test_gcp_stop_and_azure_deallocate_are_sent_once_after_5xx(httpserver, pol_policy):
    import re

    from tests.fixtures.policies import PolFakeAzure, PolFakeGcp

    gcp = PolFakeGcp()
    gcp.fail_next = []
    gcp.add("g", "us-central1-a", {})
    handler, seen = _lossy(gcp, "/stop", 503)
    httpserver.expect_request(re.compile("^/compute/.*")).respond_with_handler(handler)
    url = httpserver.url_for("/").rstrip("/")
    ginv = GcpInventory(gcp.project, None, url, url)
    ginv.compute._sleep = lambda s: None
    with pytest.raises(Exception, match="503"):
        GcpActions(ginv).stop(ginv.list_resources()[0], dry_run=False)
    assert len(seen) == 1

    az = PolFakeAzure(url)
    az.add("vm", {})
    ahandler, aseen = _lossy(az, "/deallocate", 500)
    httpserver.expect_request(re.compile("^/subscriptions/.*")).respond_with_handler(ahandler)
    ainv = AzureInventory(az.sub, None, url)
    ainv.arm._sleep = lambda s: None
    with pytest.raises(Exception, match="500"):
        AzureActions(ainv).stop(ainv.list_resources()[0], dry_run=False)
    assert len(aseen) == 1


def test_one_resource_metrics_failure_is_audited_and_the_rest_still_decided(
    httpserver, pol_policy, duckdb_wh, pol_alerts
):
    """Monitoring answers 503 for one instance: it is audited as no_metrics with the error and
    left alone; the busy, marked one is still unmarked; the run fails after (not silently)."""
    import re

    from werkzeug import Response

    from finops.policies.engine import PolicyRunError
    from tests.fixtures.policies import PolFakeGcp

    fake = PolFakeGcp()
    fake.fail_next = []
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    busy = fake.add("busy", "us-central1-a", {**OWNER, "finops-idle-marked": old})
    broken = fake.add("broken", "us-central1-a", {**OWNER, "finops-idle-marked": old})
    fake.gpu[busy] = [pol_points(60.0, 8.5), pol_points(60.0, 8.5)]

    def handler(request):  # type: ignore[no-untyped-def]
        if request.path.endswith("/timeSeries") and f'"{broken}"' in request.args.get("filter", ""):
            return Response("backend unavailable", status=503)
        return fake.handler(request)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    url = httpserver.url_for("/").rstrip("/")
    inv = GcpInventory(fake.project, None, url, url)
    inv.monitoring._sleep = lambda s: None
    with pytest.raises(PolicyRunError, match="metric"):
        run_policy(
            pol_policy(scope={"providers": ["gcp"]}),
            Cloud(inv, GcpActions(inv)),
            duckdb_wh,
            dry_run=False,
            run_id="m-err",
        )
    a = _audit(duckdb_wh, "m-err")
    assert (
        a["busy"] == ("busy", "unmark", "unmarked")
        and "finops-idle-marked" not in fake.instances["busy"]["labels"]
    )
    verdict, action, result = a["broken"]
    assert (verdict, action) == ("no_metrics", "none") and result.startswith("error:") and "503" in result
    assert (
        fake.instances["broken"]["status"] == "RUNNING"
        and fake.instances["broken"]["labels"]["finops-idle-marked"] == old
    )


def test_gcp_mark_is_lifted_when_the_owner_notice_fails(pol_gcp, pol_policy, duckdb_wh):
    """The lift reads the instance back first (setLabels changed its labelFingerprint)."""
    from finops.alerts.events import register_sink, unregister_sink
    from finops.policies.engine import PolicyRunError

    def down(ev) -> None:
        raise RuntimeError("smtp: connection refused")

    iid = pol_gcp.add("idle", "us-central1-a", OWNER)
    pol_gcp.gpu[iid] = [pol_points(1.0, 8.5), pol_points(2.0, 8.5)]
    register_sink(down)
    try:
        with pytest.raises(PolicyRunError, match="NoticeFailed"):
            run_policy(
                pol_policy(scope={"providers": ["gcp"]}),
                _gcp_cloud(pol_gcp),
                duckdb_wh,
                dry_run=False,
                run_id="g-nf",
            )
    finally:
        unregister_sink(down)
    assert pol_gcp.instances["idle"]["labels"] == OWNER
    assert _audit(duckdb_wh, "g-nf")["idle"][2].endswith("mark lifted: unmarked")
