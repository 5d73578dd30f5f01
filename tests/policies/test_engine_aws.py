"""End to end on a real moto server (EC2 + CloudWatch) through the Amazon provider hooks."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from finops.policies.actions.aws import AwsActions
from finops.policies.decide import format_mark
from finops.policies.engine import CapExceeded, Cloud, run_policy
from finops.policies.inventory.aws import AwsInventory
from tests.fixtures.policies import iam_enforced, pol_put_gpu

OWNER = {"owner": "alice@example.com", "team": "ml"}
DRY_NOTICE = "; owner notice would be sent (dry run: nothing sent)"
SENT_NOTICE = "; owner notice sent"


def _cloud(conn: str) -> Cloud:
    inv = AwsInventory(conn, "us-east-1")
    return Cloud(inv, AwsActions(conn, "us-east-1", ec2=inv.ec2))


def _audit(wh, run_id: str) -> dict[str, tuple]:
    rows = wh.query(
        "SELECT resource_id, decision, action, result, dry_run, evidence FROM policy_actions WHERE run_id = ?",
        [run_id],
    )
    return {r[0]: r[1:] for r in rows}


@pytest.fixture
def pol_fleet(pol_boto, pol_launch):
    """The scenarios of the issue, seeded in moto."""
    cw = pol_boto["cw"]
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    ids = {
        "idle": pol_launch("idle", OWNER),
        "busy": pol_launch("busy", OWNER),
        "missing": pol_launch("missing", OWNER),
        "partial": pol_launch("partial", OWNER),
        "exempt": pol_launch("exempt", {**OWNER, "finops:exempt": "true"}),
        "ownerless": pol_launch("ownerless", {}),
        "marked": pol_launch("marked", {**OWNER, "finops-idle-marked": old}),
        "busy_in_grace": pol_launch("busy-in-grace", {**OWNER, "finops-idle-marked": old}),
    }
    for k in ("idle", "exempt", "ownerless", "marked"):
        pol_put_gpu(cw, ids[k], 1.5, 8.5)
    pol_put_gpu(cw, ids["busy"], 85, 8.5)
    pol_put_gpu(cw, ids["partial"], 1.0, 3)  # only the last 3 of 8 hours
    pol_put_gpu(cw, ids["busy_in_grace"], lambda i: 70 if i < 6 else 1, 8.5)  # busy in the last 30 min
    return ids


def test_dry_run_changes_nothing_and_audits_everything(
    aws_conn, pol_fleet, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    before = pol_instances()
    res = run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, run_id="r-dry")
    assert res.dry_run is True
    assert pol_instances() == before  # states and tags untouched
    audit = _audit(duckdb_wh, "r-dry")
    assert set(audit) == set(pol_fleet.values())  # every decision audited
    ids = pol_fleet
    assert audit[ids["idle"]][:3] == ("idle", "mark", "dry_run: would mark (probe permitted)" + DRY_NOTICE)
    assert audit[ids["busy"]][:2] == ("busy", "none")
    assert audit[ids["missing"]][:2] == ("no_metrics", "none")
    assert audit[ids["partial"]][:2] == ("partial_metrics", "none")
    assert audit[ids["exempt"]][:2] == ("exempt", "none")
    assert audit[ids["marked"]][:3] == ("idle", "stop", "dry_run: would stop (probe permitted)" + DRY_NOTICE)
    assert audit[ids["busy_in_grace"]][:2] == ("busy", "unmark")
    assert all(r[3] is True for r in audit.values())
    ev = json.loads(audit[ids["idle"]][4])
    assert {s["label"] for s in ev["series"]} == {"index=0"} and ev["series"][0]["max"] == 1.5


def test_live_run_marks_stops_unmarks_and_never_touches_exempt(
    aws_conn, pol_fleet, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    before = pol_instances()
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-live")
    after = pol_instances()
    ids = pol_fleet
    assert after[ids["marked"]]["state"] in ("stopping", "stopped")
    assert after[ids["idle"]]["state"] == "running" and "finops-idle-marked" in after[ids["idle"]]["tags"]
    assert "finops-idle-marked" in after[ids["ownerless"]]["tags"]
    assert "finops-idle-marked" not in after[ids["busy_in_grace"]]["tags"]  # busy again -> unmarked
    assert after[ids["busy_in_grace"]]["state"] == "running"
    assert after[ids["exempt"]] == before[ids["exempt"]]
    for k in ("busy", "missing", "partial"):
        assert after[ids[k]] == before[ids[k]]
    # owner notified through the alert hook, routed by team; owner-less goes to the default route
    notices = {e.facts["resource_id"]: e for e in pol_alerts if e.kind == "policy_notice"}
    assert notices[ids["idle"]].team == "ml" and notices[ids["idle"]].facts["owner"] == "alice@example.com"
    assert notices[ids["ownerless"]].team is None


def test_grace_period_respected(aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh):
    recent = format_mark(datetime.now(UTC) - timedelta(hours=3))
    iid = pol_launch("recently-marked", {**OWNER, "finops-idle-marked": recent})
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-grace")
    assert pol_instances()[iid]["state"] == "running"
    assert _audit(duckdb_wh, "r-grace")[iid][:3] == ("idle", "wait", "waiting")


def test_ownerless_is_not_stopped_after_grace(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh
):
    iid = pol_launch("nobody", {"finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=48))})
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-nobody")
    assert pol_instances()[iid]["state"] == "running"
    assert _audit(duckdb_wh, "r-nobody")[iid][1] == "notify"


def test_recheck_prevents_stopping_instance_that_became_busy(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh
):
    iid = pol_launch(
        "late-job", {**OWNER, "finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=30))}
    )
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)

    def action_time() -> datetime:
        # Between the plan and the action a training job starts on the instance.
        pol_put_gpu(pol_boto["cw"], iid, 97, 0.25, end=datetime.now(UTC) + timedelta(seconds=30))
        return datetime.now(UTC) + timedelta(seconds=40)

    run_policy(
        pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-recheck", clock=action_time
    )
    after = pol_instances()[iid]
    assert after["state"] == "running"
    assert "finops-idle-marked" not in after["tags"]
    verdict, action, result, _, ev = _audit(duckdb_wh, "r-recheck")[iid]
    assert (verdict, action) == ("idle", "stop") and result == "prevented by re-check: busy"
    assert json.loads(ev)["recheck"]["verdict"] == "busy"


def test_cap_aborts_before_first_action(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    for i in range(4):
        pol_put_gpu(pol_boto["cw"], pol_launch(f"idle-{i}", OWNER), 0.1, 8.5, gpus=1)
    before = pol_instances()
    with pytest.raises(CapExceeded):
        run_policy(
            pol_policy(max_actions_per_run=3), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-cap"
        )
    assert pol_instances() == before
    rows = _audit(duckdb_wh, "r-cap")
    assert len(rows) == 4 and all(r[2].startswith("aborted") for r in rows.values())
    assert any(e.kind == "policy_cap_exceeded" and e.severity == "critical" for e in pol_alerts)


def test_idle_instances_not_opted_in_neither_spend_the_cap_nor_get_marked(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    """Four idle GPUs not opted in and one opted in, under a cap of 3: before opt_in_tag the five
    planned marks aborted the run (and the shipped IAM policy would have refused four of them),
    so the opted-in instance was never handled."""
    others = [pol_launch(f"idle-{i}", OWNER) for i in range(4)]
    opted = pol_launch("opted", {**OWNER, "finops:auto-stop": "enabled"})
    for iid in (*others, opted):
        pol_put_gpu(pol_boto["cw"], iid, 0.1, 8.5, gpus=1)
    policy = pol_policy(max_actions_per_run=3, opt_in_tag="finops:auto-stop=enabled")
    run_policy(policy, _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-optin")
    rows = _audit(duckdb_wh, "r-optin")
    assert rows[opted][:2] == ("idle", "mark") and "finops-idle-marked" in pol_instances()[opted]["tags"]
    for iid in others:
        assert rows[iid][:2] == ("idle", "report")
        assert "finops-idle-marked" not in pol_instances()[iid]["tags"]
    assert not any(e.kind == "policy_cap_exceeded" for e in pol_alerts)


def test_just_launched_is_too_young(aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh):
    iid = pol_launch("fresh", OWNER, age_h=0)
    pol_put_gpu(pol_boto["cw"], iid, 0.0, 8.5)
    run_policy(pol_policy(min_age_hours=2), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-young")
    assert _audit(duckdb_wh, "r-young")[iid][:2] == ("too_young", "none")
    assert "finops-idle-marked" not in pol_instances()[iid]["tags"]


def test_hostile_tag_values_are_inert(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    evil = "x'); DROP TABLE policy_actions; -- <!channel> *bold* =cmd|'/c calc'!A1"
    iid = pol_launch(evil[:200], {"owner": evil, "team": evil})
    pol_put_gpu(pol_boto["cw"], iid, 0.0, 8.5)
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-evil")
    assert duckdb_wh.table_exists("policy_actions")
    row = duckdb_wh.query("SELECT owner, resource_name FROM policy_actions WHERE run_id = ?", ["r-evil"])
    assert row == [(evil, evil[:200])]
    ev = next(e for e in pol_alerts if e.kind == "policy_notice")
    assert evil not in ev.title and ev.facts["owner"] == evil  # value travels as data, not markup


def test_denied_stop_is_reported_not_forced(aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh):
    """An account whose IAM refuses the probe: result 'denied', instance untouched."""
    from botocore.exceptions import ClientError

    iid = pol_launch(
        "x", {**OWNER, "finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=30))}
    )
    pol_put_gpu(pol_boto["cw"], iid, 0.0, 8.5)
    acts = AwsActions(aws_conn, "us-east-1")
    real = acts.ec2.stop_instances
    calls: list[dict] = []

    def deny(**kw):
        calls.append(kw)
        raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "StopInstances")

    acts.ec2.stop_instances = deny
    try:
        run_policy(
            pol_policy(),
            Cloud(AwsInventory(aws_conn, "us-east-1"), acts),
            duckdb_wh,
            dry_run=False,
            run_id="r-deny",
        )
    finally:
        acts.ec2.stop_instances = real
    assert [c.get("DryRun") for c in calls] == [True]  # probe only, never the real call
    assert _audit(duckdb_wh, "r-deny")[iid][2] == "denied: UnauthorizedOperation"


def test_mark_copied_onto_a_new_instance_is_not_obeyed(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    """A new instance launched with an old instance's tags (mark included) is marked afresh and its
    owner warned; it is not stopped on its first idle window."""
    copied = format_mark(datetime.now(UTC) - timedelta(days=3))
    iid = pol_launch("clone", {**OWNER, "finops-idle-marked": copied}, age_h=9)
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5, gpus=1)
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-clone")
    after = pol_instances()[iid]
    assert after["state"] == "running"
    verdict, action, result, _, ev = _audit(duckdb_wh, "r-clone")[iid]
    assert (verdict, action, result) == ("idle", "mark", "marked" + SENT_NOTICE)
    assert json.loads(ev)["grace_until"] > datetime.now(UTC).isoformat()
    assert after["tags"]["finops-idle-marked"] != copied and json.loads(ev)["ignored_mark"] == copied
    assert any(e.kind == "policy_notice" and e.facts["resource_id"] == iid for e in pol_alerts)


def test_endpoint_that_ignores_dry_run_is_an_error_not_a_dry_run(
    aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh
):
    """An EC2-compatible endpoint that executes a DryRun=True StopInstances (answers 200) has
    stopped the instance: the dry run must not be audited as 'probe permitted'."""
    from botocore.stub import Stubber

    from finops.policies.engine import PolicyRunError

    iid = pol_launch(
        "x", {**OWNER, "finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=30))}
    )
    pol_put_gpu(pol_boto["cw"], iid, 0.0, 8.5)
    acts = AwsActions(aws_conn, "us-east-1")
    stub = Stubber(acts.ec2)
    stub.add_response(
        "stop_instances",
        {
            "StoppingInstances": [
                {
                    "InstanceId": iid,
                    "CurrentState": {"Code": 64, "Name": "stopping"},
                    "PreviousState": {"Code": 16, "Name": "running"},
                }
            ]
        },
        {"DryRun": True, "InstanceIds": [iid]},
    )
    with stub, pytest.raises(PolicyRunError, match="DryRunIgnored"):
        run_policy(
            pol_policy(), Cloud(AwsInventory(aws_conn, "us-east-1"), acts), duckdb_wh, run_id="r-ignored"
        )
    stub.assert_no_pending_responses()  # the probe only: never a second, real call
    verdict, action, result, dry, _ = _audit(duckdb_wh, "r-ignored")[iid]
    assert (verdict, action, dry) == ("idle", "stop", True)
    assert result.startswith("error: DryRunIgnored") and "stopping" in result


@pytest.fixture
def pol_broken_channel():
    """A registered sink that fails like a Slack webhook answering 500."""
    from finops.alerts.events import register_sink, unregister_sink

    def down(ev) -> None:
        raise RuntimeError("slack:slack_ml: HTTP 500 from hooks.slack.com")

    register_sink(down)
    yield
    unregister_sink(down)


def test_undelivered_owner_notice_lifts_the_mark_and_is_audited(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_broken_channel
):
    """Nobody was warned, so no grace period may run: the mark is lifted, the audit row says why
    (not 'marked' / 'notified'), and the run fails."""
    from finops.policies.engine import PolicyRunError

    idle = pol_launch("idle", OWNER)
    nobody = pol_launch(
        "nobody", {"finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=30))}
    )
    for iid in (idle, nobody):
        pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5, gpus=1)
    with pytest.raises(PolicyRunError, match="NoticeFailed"):
        run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-undelivered")
    after, audit = pol_instances(), _audit(duckdb_wh, "r-undelivered")
    assert "finops-idle-marked" not in after[idle]["tags"] and after[idle]["state"] == "running"
    verdict, action, result, _, _ = audit[idle]
    assert (verdict, action) == ("idle", "mark")
    assert (
        result.startswith("error: NoticeFailed: marked, but the owner notice was not delivered")
        and "HTTP 500" in result
    )
    assert result.endswith("mark lifted: unmarked")
    assert audit[nobody][1] == "notify" and audit[nobody][2].startswith(
        "error: NoticeFailed: violation notice not delivered"
    )


def test_unmark_removes_every_spelling_of_the_mark(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts
):
    """The mark is read by its normalised key, so a hand-written `FinOps_Idle_Marked` counts as
    the mark; unmarking deleted only `finops-idle-marked`, so the old mark outlived the busy
    spell and the next idle hour would have stopped the instance with no new grace period."""
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    iid = pol_launch("busy-again", {**OWNER, "FinOps_Idle_Marked": old})
    pol_put_gpu(pol_boto["cw"], iid, lambda i: 70 if i < 6 else 1, 8.5)  # busy in the last 30 min
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, dry_run=False, run_id="r-unmark")
    assert _audit(duckdb_wh, "r-unmark")[iid][:3] == ("busy", "unmark", "unmarked")
    tags = pol_instances()[iid]["tags"]
    assert "FinOps_Idle_Marked" not in tags and tags["owner"] == OWNER["owner"]


def test_same_day_tag_snapshot_drops_a_resource_gone_since(
    aws_conn, pol_boto, pol_launch, duckdb_wh, pol_alerts
):
    """A re-run the same day replaced the snapshot resource by resource: a resource terminated
    in between kept its non-compliant row (and its cost in the violations report)."""
    from finops.policies.model import Policy

    pol = Policy.model_validate(
        {
            "name": "required-tags",
            "kind": "tags",
            "action": "report",
            "scope": {"providers": ["aws"]},
            "required_tags": [{"key": "team"}],
        }
    )
    keep = pol_launch("keep", {"team": "ml"})
    gone = pol_launch("gone", {})

    def snapshot() -> dict[str, bool]:
        return dict(
            duckdb_wh.query("SELECT resource_id, compliant FROM tag_compliance WHERE policy = ?", [pol.name])
        )

    run_policy(pol, _cloud(aws_conn), duckdb_wh, run_id="t-1")
    assert snapshot() == {keep: True, gone: False}
    pol_boto["ec2"].terminate_instances(InstanceIds=[gone])
    run_policy(pol, _cloud(aws_conn), duckdb_wh, run_id="t-2")
    assert snapshot() == {keep: True}


def test_a_denied_mark_tells_the_owner_nothing(
    aws_conn, pol_boto, pol_launch, pol_instances, pol_policy, duckdb_wh, pol_alerts, monkeypatch
):
    """The shipped IAM policy lets CreateTags through only on opted-in instances (finops:auto-stop).
    For any other idle instance the mark's probe is refused, nothing is marked and no grace period
    runs, yet its owner was told 'marked for stop' with a grace deadline, again on every live run."""
    iid = pol_launch("idle", OWNER)
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)
    reads = [
        "ec2:DescribeInstances",
        "ec2:DescribeInstanceTypes",
        "cloudwatch:GetMetricData",
        "cloudwatch:ListMetrics",
        "ec2:StopInstances",
    ]
    with iam_enforced(pol_boto, monkeypatch, reads) as conn:
        inv = AwsInventory(conn, "us-east-1", account="123456789012")
        run_policy(
            pol_policy(),
            Cloud(inv, AwsActions(conn, "us-east-1", ec2=inv.ec2)),
            duckdb_wh,
            dry_run=False,
            run_id="r-mark-denied",
        )
    decision, action, result, *_ = _audit(duckdb_wh, "r-mark-denied")[iid]
    assert (decision, action) == ("idle", "mark") and result.startswith("denied: ")
    assert "finops-idle-marked" not in pol_instances()[iid]["tags"]
    assert not [e for e in pol_alerts if e.kind == "policy_notice"]
