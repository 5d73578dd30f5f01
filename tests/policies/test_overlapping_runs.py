"""Two runs of one policy that overlap: both list the fleet before either acts (the lock orders
only the acting), so both planned to mark the same idle instance. The second marked it again
(restarting the grace period) and warned its owner a second time."""

from __future__ import annotations

from finops.policies import audit
from finops.policies.actions.aws import AwsActions
from finops.policies.engine import Cloud, run_policy
from finops.policies.inventory.aws import AwsInventory
from tests.fixtures.policies import pol_put_gpu

OWNER = {"owner": "alice@example.com", "team": "ml"}


class _ListsThenWaits(AwsInventory):
    """An inventory whose listing is taken, then another whole run happens, then the (now
    stale) listing is returned: what a run sees when another one acts while it lists."""

    def __init__(self, conn: str, meanwhile):  # type: ignore[no-untyped-def]
        super().__init__(conn, "us-east-1", account="123456789012")
        self.meanwhile = meanwhile

    def list_resources(self, instance_ids=None):  # type: ignore[no-untyped-def]
        listed = super().list_resources(instance_ids)
        if instance_ids is None and self.meanwhile is not None:
            other, self.meanwhile = self.meanwhile, None
            other()
        return listed


def test_overlapping_runs_mark_and_warn_once(
    aws_conn, pol_boto, pol_launch, pol_policy, pol_instances, duckdb_wh, pol_alerts
):
    iid = pol_launch("idle", OWNER)
    pol_put_gpu(pol_boto["cw"], iid, 1.0, 1.5)
    policy = pol_policy(idle={"hours": 1})

    def cloud(meanwhile=None) -> Cloud:  # type: ignore[no-untyped-def]
        inv = _ListsThenWaits(aws_conn, meanwhile)
        return Cloud(inv, AwsActions(aws_conn, "us-east-1", ec2=inv.ec2))

    def first() -> None:
        run_policy(policy, cloud(), duckdb_wh, dry_run=False, run_id="first")

    run_policy(policy, cloud(first), duckdb_wh, dry_run=False, run_id="second")
    mark_after_first = duckdb_wh.query(
        "SELECT result FROM policy_actions WHERE run_id = 'first' AND resource_id = ?", [iid]
    )[0][0]
    assert mark_after_first == "marked; " + audit.NOTICE_SENT
    notices = [e for e in pol_alerts if e.kind == "policy_notice" and e.facts.get("resource_id") == iid]
    assert len(notices) == 1, [e.facts for e in notices]
    status, result = duckdb_wh.query(
        "SELECT status, result FROM policy_actions WHERE run_id = 'second' AND resource_id = ?", [iid]
    )[0]
    assert audit.outcome_of(status, result, False) == "skipped" and "first" in result, result
