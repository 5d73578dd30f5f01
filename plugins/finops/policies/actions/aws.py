"""AWS actions. Every mutating call is first probed with `DryRun=True`: an IAM denial (the
example policy in include/iam/ only allows StopInstances on opted-in instances) shows up
as `denied` before anything happens, and in dry-run mode the probe is all that runs. An
endpoint that answers a DryRun probe with success has ignored DryRun and acted: that is
raised (audited as an error, the run fails), never reported as a harmless dry run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from finops.exceptions import CloudActionError
from finops.policies.decide import Resource
from finops.policies.inventory.aws import _client
from finops.policies.model import spellings


class DryRunIgnored(CloudActionError, RuntimeError):
    """The endpoint executed a `DryRun=True` call instead of answering DryRunOperation."""


class AwsActions:
    provider = "aws"
    supports_tags = True

    def __init__(self, conn_id: str = "aws_default", region: str = "us-east-1", ec2: Any | None = None):
        self.ec2 = ec2 if ec2 is not None else _client(conn_id, region, "ec2")

    def _probe(self, call: Callable[..., Any], **kw: Any) -> str | None:
        """None when permitted, else the refusal code (e.g. UnauthorizedOperation)."""
        try:
            resp = call(DryRun=True, **kw)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            return None if code == "DryRunOperation" else code or "probe_failed"
        # Success means the endpoint ignored DryRun and did it: not a dry run, nor to be repeated.
        answer = {k: v for k, v in (resp or {}).items() if k != "ResponseMetadata"}
        raise DryRunIgnored(
            f"{getattr(call, '__name__', 'call')} with DryRun=True was executed by the endpoint "
            f"(answered {str(answer)[:200]}); it does not honour DryRun, so nothing is safe to probe"
        )

    def _run(self, call: Callable[..., Any], dry_run: bool, done: str, verb: str, **kw: Any) -> str:
        refused = self._probe(call, **kw)
        if refused:
            return f"denied: {refused}"
        if dry_run:
            return f"dry_run: would {verb} (probe permitted)"
        call(**kw)
        return done

    def mark(self, resource: Resource, key: str, value: str, dry_run: bool) -> str:
        return self._run(
            self.ec2.create_tags,
            dry_run,
            "marked",
            "mark",
            Resources=[resource.resource_id],
            Tags=[{"Key": key, "Value": value}],
        )

    def unmark(self, resource: Resource, key: str, dry_run: bool) -> str:
        keys = spellings(resource.tags, key)
        return self._run(
            self.ec2.delete_tags,
            dry_run,
            "unmarked",
            "unmark",
            Resources=[resource.resource_id],
            Tags=[{"Key": k} for k in keys],
        )

    def stop(self, resource: Resource, dry_run: bool) -> str:
        refused = self._probe(self.ec2.stop_instances, InstanceIds=[resource.resource_id])
        if refused:
            return f"denied: {refused}"
        if dry_run:
            return "dry_run: would stop (probe permitted)"
        resp = self.ec2.stop_instances(InstanceIds=[resource.resource_id])
        states = [s.get("CurrentState", {}).get("Name", "?") for s in resp.get("StoppingInstances", [])]
        return f"stopped: {','.join(states) or 'requested'}"
