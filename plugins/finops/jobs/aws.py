"""The `aws` job provider: one EC2 instance per attempt (spot or on-demand), behind the
executor's Provider interface.

- start: `run_instances` with the job's tags on the instance and its volumes, spot market
  options for a spot candidate, IMDSv2 only, InstanceInitiatedShutdownBehavior=terminate and
  ClientToken = job id + attempt (a retried call gets the same instance, not a second one).
  The user data exports the FINOPS_* variables, runs the spec's bootstrap steps, runs the job
  under `finops.jobs.local_wrap --store-exit` (its exit code lands in the checkpoint store as
  `exits/<launch token>`) and powers off, which terminates the instance. Every value in the
  script is shell-quoted. Capacity answers (InsufficientInstanceCapacity, a spot price or
  count limit, ...) raise CapacityError, so the planner moves to the next candidate.
- status: pending / running -> `running`; an exit code in the store -> `exited:<code>`;
  otherwise an ended instance is `gone` (a spot reclaim, or ended by anyone else).
- terminate: `terminate_instances`; the OS shutdown it starts sends the job SIGTERM, so the
  job saves at its next step boundary.
- find: instances by the `finops-job-id` tag, not yet terminated.

The image must have Python with this package (the checkpoint library) and the job's code.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Mapping
from typing import Any

from finops.jobs.executor import CapacityError
from finops.jobs.local import job_argv, job_env
from finops.jobs.planner import Candidate
from finops.jobs.spec import JobSpec

CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded",
    "InstanceLimitExceeded", "Unsupported",
})  # fmt: skip
ALIVE = ["pending", "running", "shutting-down", "stopping", "stopped"]
TAG_TOKEN = "finops-launch"
TAG_CKPT = "finops-checkpoint"


def user_data(
    spec: JobSpec, attempt: int, precision: str, token: str, python: str = "python3", provider: str = "aws"
) -> str:
    """The instance's boot script: environment, bootstrap steps, the job, report, power off.
    `provider` names the cloud whose interruption notice the job watches (finops.jobs.notices)."""
    env = {**job_env(spec, attempt, precision), "FINOPS_PROVIDER": provider}
    argv = job_argv(spec)
    if spec.run.module is not None:  # the orchestrator's interpreter path means nothing there
        argv = [python, *argv[1:]]
    q = shlex.join
    lines = ["#!/bin/bash", "set -u", *(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()))]
    exit_name = f"exits/{token}"
    for step in spec.run.bootstrap:
        lines.append(
            f"{q(step)} || {{ {python} -c {shlex.quote(_REPORT)} {shlex.quote(exit_name)} 97; shutdown -h now; exit 1; }}"
        )
    lines.append(q([python, "-m", "finops.jobs.local_wrap", "--store-exit", exit_name, "--", *argv]))
    lines.append("shutdown -h now")
    return "\n".join(lines) + "\n"


# a failed bootstrap reports exit 97 the same way the wrapper reports the job's code
_REPORT = (
    "import os, sys; from finops.jobs.stores import open_store; "
    "open_store(os.environ['FINOPS_CHECKPOINT_URI']).put(sys.argv[1], sys.argv[2].encode())"
)


class AwsJobProvider:
    name = "aws"

    def __init__(
        self,
        region: str,
        image_id: str,
        *,
        conn_id: str | None = None,
        subnet_id: str | None = None,
        security_group_ids: list[str] | None = None,
        key_name: str | None = None,
        instance_profile_arn: str | None = None,
        python: str = "python3",
        client: Any = None,
    ) -> None:
        self.region, self.image_id, self.conn_id = region, image_id, conn_id
        self.subnet_id, self.security_group_ids, self.key_name = (
            subnet_id,
            list(security_group_ids or []),
            key_name,
        )
        self.instance_profile_arn, self.python = instance_profile_arn, python
        self._client = client

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> AwsJobProvider:
        return cls(
            cfg["region"], cfg["image_id"], conn_id=cfg.get("conn_id"), subnet_id=cfg.get("subnet_id"),
            security_group_ids=cfg.get("security_group_ids"), key_name=cfg.get("key_name"),
            instance_profile_arn=cfg.get("instance_profile_arn"), python=cfg.get("python", "python3"),
        )  # fmt: skip

    def config(self) -> dict[str, Any]:
        return {"kind": "aws", "region": self.region, "image_id": self.image_id, "conn_id": self.conn_id,
                "subnet_id": self.subnet_id, "security_group_ids": self.security_group_ids,
                "key_name": self.key_name, "instance_profile_arn": self.instance_profile_arn,
                "python": self.python}  # fmt: skip

    @property
    def client(self) -> Any:
        if self._client is None:
            if self.conn_id:
                from finops.connections import aws_client

                self._client = aws_client(self.conn_id, "ec2", self.region)
            else:  # the default credential chain (AWS_ENDPOINT_URL for an emulator)
                import boto3

                self._client = boto3.client("ec2", region_name=self.region)
        return self._client

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        from botocore.exceptions import ClientError

        token = uuid.uuid4().hex
        all_tags = {**tags, TAG_TOKEN: token, "Name": f"finops-job-{spec.name}-{attempt}"}
        if len(spec.checkpoint_uri) <= 256:
            all_tags[TAG_CKPT] = spec.checkpoint_uri
        tag_list = [{"Key": k, "Value": v[:256]} for k, v in all_tags.items()]
        p: dict[str, Any] = {
            "ImageId": self.image_id,
            "InstanceType": candidate.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": f"{tags.get('finops-job-id', spec.name)}-a{attempt}",
            "UserData": user_data(spec, attempt, precision, token, self.python),
            "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tag_list},
                {"ResourceType": "volume", "Tags": tag_list},
            ],  # fmt: skip
            "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        }
        if self.subnet_id:
            p["SubnetId"] = self.subnet_id
        if self.security_group_ids:
            p["SecurityGroupIds"] = self.security_group_ids
        if self.key_name:
            p["KeyName"] = self.key_name
        if self.instance_profile_arn:
            p["IamInstanceProfile"] = {"Arn": self.instance_profile_arn}
        if candidate.pricing_model == "spot":
            p["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
            }
        try:
            resp = self.client.run_instances(**p)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in CAPACITY_CODES:
                raise CapacityError(f"{code}: {e.response['Error'].get('Message', '')}"[:500]) from e
            raise
        return str(resp["Instances"][0]["InstanceId"])

    def _describe(self, instance_id: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        try:
            resp = self.client.describe_instances(InstanceIds=[instance_id])
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") == "InvalidInstanceID.NotFound":
                return None
            raise
        found = [i for r in resp["Reservations"] for i in r["Instances"]]
        return found[0] if found else None

    def _exit_code(self, inst: dict[str, Any]) -> int | None:
        tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
        if TAG_TOKEN not in tags or TAG_CKPT not in tags:
            return None
        from finops.jobs.stores import open_store

        blob = open_store(tags[TAG_CKPT]).get(f"exits/{tags[TAG_TOKEN]}")
        try:
            return None if blob is None else int(blob.decode())
        except ValueError:
            return None

    def status(self, instance_id: str) -> str:
        inst = self._describe(instance_id)
        state = inst["State"]["Name"] if inst else "terminated"
        if state in ("pending", "running"):
            return "running"
        code = self._exit_code(inst) if inst else None
        if code is not None:
            return f"exited:{code}"
        if state in ("shutting-down", "stopping"):
            return "running"  # still ending: its exit code may be on its way
        return "gone"

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """terminate_instances: EC2 shuts the OS down first, which sends the job SIGTERM (its
        Checkpointer saves at the next step boundary); `grace_s` is not needed for that."""
        self.client.terminate_instances(InstanceIds=[instance_id])
        return self.status(instance_id)

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        filters = [{"Name": "instance-state-name", "Values": ALIVE}]
        filters.append({"Name": "tag:finops-job-id", "Values": [job_id]} if job_id else
                       {"Name": "tag-key", "Values": ["finops-job-id"]})  # fmt: skip
        out = []
        for page in self.client.get_paginator("describe_instances").paginate(Filters=filters):
            for r in page["Reservations"]:
                for i in r["Instances"]:
                    out.append((i["InstanceId"], {t["Key"]: t["Value"] for t in i.get("Tags", [])}))
        return out
