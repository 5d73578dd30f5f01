"""Every `policy_actions` row says what happened: sent / done, would-send in a dry run, refused,
failed, or unknown. Each action type (notify, mark, unmark, stop, terminate) x dry run / live x
success / cloud refusal / crash, against moto (AWS, IAM enforced for the refusals) and the Lambda
Cloud API server. A dry run of a tags policy used to record its violation notices as
`notified`, although nothing was sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from finops.policies import audit
from finops.policies.actions.aws import AwsActions
from finops.policies.actions.lambda_cloud import LambdaActions
from finops.policies.decide import format_mark
from finops.policies.engine import Cloud, PolicyRunError, run_policy
from finops.policies.inventory.aws import AwsInventory
from finops.policies.inventory.lambda_cloud import LambdaInventory
from finops.policies.model import Policy
from tests.fixtures.policies import iam_enforced, pol_lambda_policy, pol_put_gpu

OWNER = {"owner": "alice@example.com", "team": "ml"}
READS = [
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypes",
    "cloudwatch:GetMetricData",
    "cloudwatch:ListMetrics",
]
AWS_ACTIONS = ("notify_tags", "notify_ownerless", "mark", "unmark", "stop")
# the outcome each (mode, fault) must read as; a notice has no cloud call to refuse: its
# "refusal" is the alert channel refusing delivery, which fails the action
EXPECTED = {
    ("dry", "ok"): "would",
    ("live", "ok"): "done",
    ("dry", "refused"): "refused",
    ("live", "refused"): "refused",
    ("dry", "crash"): "failed",
    ("live", "crash"): "failed",
}
NOTICE_EXPECTED = {
    **EXPECTED,
    ("dry", "refused"): "would",
    ("live", "refused"): "failed",
    ("dry", "crash"): "would",
    ("live", "crash"): "failed",
}


def _old_mark() -> str:
    return format_mark(datetime.now(UTC) - timedelta(hours=30))


def _tags_policy() -> Policy:
    return Policy.model_validate(
        {
            "name": "tags-notify",
            "kind": "tags",
            "action": "notify",
            "scope": {"providers": ["aws"]},
            "required_tags": [{"key": "cost-center"}],
            "max_actions_per_run": 10,
        }
    )


def _fleet(pol_boto, pol_launch) -> dict[str, str]:
    """One instance per action: the idle policy marks, unmarks, stops and (owner-less after its
    grace) notifies; the tags policy notifies about the instance without `cost-center`."""
    cw = pol_boto["cw"]
    marked = {**OWNER, "finops-idle-marked": _old_mark(), "cost-center": "cc-1"}
    ids = {
        "mark": pol_launch("idle", {**OWNER, "cost-center": "cc-1"}),
        "unmark": pol_launch("busy-again", marked),
        "stop": pol_launch("idle-marked", marked),
        "notify_ownerless": pol_launch(
            "ownerless", {"finops-idle-marked": _old_mark(), "cost-center": "cc-1"}
        ),
    }
    for action, iid in ids.items():
        pol_put_gpu(cw, iid, 85 if action == "unmark" else 1.0, 1.5)
    ids["notify_tags"] = pol_launch("untagged", OWNER)  # stopped-looking to idle: no metrics -> none
    return ids


def _rows(wh, run_id: str) -> dict[str, tuple[str, str, str, bool]]:  # type: ignore[no-untyped-def]
    rows = wh.query(
        "SELECT resource_id, action, status, result, dry_run FROM policy_actions WHERE run_id = ?", [run_id]
    )
    return {r[0]: r[1:] for r in rows}


@pytest.mark.parametrize("fault", ["ok", "refused", "crash"])
@pytest.mark.parametrize("mode", ["dry", "live"])
def test_every_aws_action_row_says_what_happened(
    mode, fault, aws_conn, pol_boto, pol_launch, pol_policy, pol_instances, duckdb_wh, pol_alerts, monkeypatch
):
    """refused: IAM allows the reads and none of the writes (the notices: the mail server
    refuses them); crash: every EC2 write dies on the wire (the notices: the sink raises)."""
    from finops.alerts.events import register_sink, unregister_sink

    ids = _fleet(pol_boto, pol_launch)
    before = pol_instances()
    dry = mode == "dry"

    def failing_channel(ev) -> None:  # type: ignore[no-untyped-def]
        if ev.kind == "policy_notice" and ev.facts.get("resource_id") in (
            ids["notify_tags"],
            ids["notify_ownerless"],
        ):
            raise (
                ConnectionRefusedError("smtp: 554 transaction failed")
                if fault == "refused"
                else RuntimeError("alert sink crashed")
            )

    def run(conn: str) -> None:
        inv = AwsInventory(conn, "us-east-1", account="123456789012")
        acts = AwsActions(conn, "us-east-1", ec2=inv.ec2)
        if fault == "crash":  # the EC2 write dies on the wire (the probe too): nothing answered

            def reset(**_):  # type: ignore[no-untyped-def]
                raise ConnectionResetError("connection reset by peer")

            for op in ("CreateTags", "DeleteTags", "StopInstances"):
                acts.ec2.meta.events.register(f"before-send.ec2.{op}", reset)
        for policy, run_id in ((pol_policy(idle={"hours": 1}), "idle"), (_tags_policy(), "tags")):
            try:
                run_policy(policy, Cloud(inv, acts), duckdb_wh, dry_run=dry, run_id=run_id)
            except PolicyRunError:
                pass  # a failed action fails the run after every row is settled

    if fault != "ok":
        register_sink(failing_channel)
    try:
        if fault == "refused":
            with iam_enforced(pol_boto, monkeypatch, READS) as conn:
                run(conn)
        else:
            run(aws_conn)
    finally:
        unregister_sink(failing_channel)

    rows = {
        **{k: v for k, v in _rows(duckdb_wh, "idle").items() if k != ids["notify_tags"]},
        ids["notify_tags"]: _rows(duckdb_wh, "tags")[ids["notify_tags"]],
    }
    after = pol_instances()
    for action in AWS_ACTIONS:
        iid = ids[action]
        got_action, status, result, row_dry = rows[iid]
        notice = action.startswith("notify")
        assert (got_action, row_dry) == ("notify" if notice else action, dry), (action, rows[iid])
        outcome = audit.outcome_of(status, result, row_dry)
        assert outcome == (NOTICE_EXPECTED if notice else EXPECTED)[(mode, fault)], (action, status, result)
        sent = [
            e
            for e in pol_alerts
            if e.kind == "policy_notice"
            and e.facts.get("resource_id") == iid
            and not (fault != "ok" and notice)
        ]
        if outcome != "done":  # nothing changed on the cloud, and the row does not claim a notice
            assert (after[iid]["state"], after[iid]["tags"]) == (before[iid]["state"], before[iid]["tags"]), (
                action
            )
            assert audit.NOTICE_SENT not in result and "sent:" not in result, result
        if dry:
            assert not sent, action
            assert outcome != "would" or "would" in result, result
        if outcome == "done":
            assert len(sent) == int(action != "unmark"), (action, sent)  # an unmark tells nobody
            assert action == "unmark" or audit.NOTICE_SENT in result or result.startswith("sent: "), result
        if outcome == "failed":
            assert result.startswith("error: "), result
    if (mode, fault) == ("live", "ok"):
        assert after[ids["stop"]]["state"] in ("stopping", "stopped")
        assert "finops-idle-marked" in after[ids["mark"]]["tags"]
        assert "finops-idle-marked" not in after[ids["unmark"]]["tags"]


@pytest.mark.parametrize("fault", ["ok", "refused", "crash"])
@pytest.mark.parametrize("mode", ["dry", "live"])
def test_lambda_terminate_row_says_what_happened(mode, fault, pol_lambda, httpserver, duckdb_wh, pol_alerts):
    """Terminate (Lambda Cloud, marks kept in policy_marks): refused = not opted in on the
    actions side; crash = the API answers 500 to the terminate call."""
    from werkzeug import Response

    iid = pol_lambda.add("untagged-8x", {"owner": "carol"})
    policy = pol_lambda_policy()
    audit.store_mark(
        duckdb_wh, "earlier", policy.name, "lambda", iid, datetime.now(UTC) - timedelta(hours=30)
    )
    if fault == "crash":
        handler = pol_lambda.handler

        def failing(request):  # type: ignore[no-untyped-def]
            if request.path.endswith("/terminate"):
                return Response('{"error": {"code": "global/unknown"}}', status=500)
            return handler(request)

        import re

        httpserver.clear_all_handlers()
        httpserver.expect_request(re.compile(".*")).respond_with_handler(failing)
    inv = LambdaInventory("lambda-main", lambda: "k", pol_lambda.url)
    run_id, dry = f"lt-{mode}-{fault}", mode == "dry"
    try:
        run_policy(
            policy,
            Cloud(inv, LambdaActions(inv, allow_terminate=fault != "refused")),
            duckdb_wh,
            dry_run=dry,
            run_id=run_id,
        )
    except PolicyRunError:
        pass
    action, status, result, row_dry = _rows(duckdb_wh, run_id)[iid]
    assert action == "terminate" and row_dry is dry
    # a dry run calls nothing on Lambda (no DryRun API), so a dying endpoint cannot fail it
    want = "would" if (mode, fault) == ("dry", "crash") else EXPECTED[(mode, fault)]
    assert audit.outcome_of(status, result, row_dry) == want, (status, result)
    terminated = pol_lambda.instances[iid]["status"] == "terminating"
    assert terminated is (mode == "live" and fault == "ok")
    sent = [e for e in pol_alerts if e.kind == "policy_notice" and e.facts.get("action") == "terminated"]
    assert len(sent) == int(terminated)


def test_outcome_of_reads_unknown_and_flags_contradictions():
    assert audit.outcome_of(audit.PENDING, audit.outcome_unknown("stop"), False) == "unknown"
    assert audit.outcome_of(audit.UNKNOWN, "outcome unknown: ...", False) == "unknown"
    assert audit.outcome_of(audit.DONE, "notified", True) == "untruthful"  # what a dry run used to record
    assert audit.outcome_of(audit.DONE, "dry_run: would stop", False) == "untruthful"
    assert audit.outcome_of(audit.DONE, "prevented by re-check: busy", False) == "skipped"
