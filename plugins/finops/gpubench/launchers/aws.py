"""AWS EC2 launcher: `run_instances` (spot or on-demand) through the Amazon provider's hook.

Idempotent: ClientToken = bench_run_id, so a retried launch task gets the same instance back
instead of a second one -- unless that instance has ended (a failed attempt's cleanup ended
it): EC2 then answers the token with the terminated instance, so the launch is re-issued once
with a fresh token rather than waiting 50 minutes on an instance that is gone. Safe: InstanceInitiatedShutdownBehavior=terminate (the bootstrap's
power-off after its TTL terminates the instance), tags on instance and volumes, IMDSv2 only.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from finops.gpubench.launchers.base import (
    TAG_BENCH,
    TAG_EXPIRES,
    TAG_RUN,
    CapReached,
    Instance,
    LaunchSpec,
    launch_failed,
    parse_iso,
)
from finops.gpubench.settings import Target

log = logging.getLogger(__name__)
ALIVE = ["pending", "running", "shutting-down", "stopping", "stopped"]
USABLE = ("pending", "running")


class AwsLauncher:
    provider = "aws"

    def __init__(self, client: Any, target: Target, max_running: int = 8):
        self.client = client
        self.target = target
        self.max_running = max_running

    @classmethod
    def from_conn(cls, conn_id: str, target: Target, max_running: int = 8) -> AwsLauncher:
        from finops.connections import aws_client

        return cls(aws_client(conn_id, "ec2", target.region), target, max_running)

    def params(self, spec: LaunchSpec) -> dict[str, Any]:
        t = self.target
        tags = [{"Key": k, "Value": v} for k, v in spec.tags().items()]
        p: dict[str, Any] = {
            "ImageId": t.image_id,
            "InstanceType": spec.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": spec.bench_run_id,
            "UserData": spec.user_data,  # boto3 base64-encodes it
            "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tags},
                {"ResourceType": "volume", "Tags": tags},
            ],
            "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        }
        if t.subnet_id:
            p["SubnetId"] = t.subnet_id
        if t.security_group_ids:
            p["SecurityGroupIds"] = list(t.security_group_ids)
        if t.key_name:
            p["KeyName"] = t.key_name
        if spec.pricing_model == "spot":
            p["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
            }
        return p

    def launch(self, spec: LaunchSpec) -> list[str]:
        alive = self.find()
        mine = [i.instance_id for i in alive if i.bench_run_id == spec.bench_run_id and i.state in USABLE]
        if mine:  # a retried task: the instance is already there (ClientToken covers the API side)
            log.info("bench run %s already has %s: not launching again", spec.bench_run_id, mine)
            return mine
        if len(alive) >= self.max_running:
            raise CapReached(
                f"{len(alive)} benchmark instances alive in {spec.region} (cap {self.max_running})"
            )
        try:
            params = self.params(spec)
            resp = self.client.run_instances(**params)
            if all(i.get("State", {}).get("Name") not in USABLE for i in resp["Instances"]):
                # the token answered with an ended attempt's instance: one fresh launch
                ended = [i["InstanceId"] for i in resp["Instances"]]
                log.warning(
                    "bench run %s: ClientToken returned ended instance(s) %s; launching anew",
                    spec.bench_run_id,
                    ended,
                )
                params["ClientToken"] = f"{spec.bench_run_id}-{uuid.uuid4().hex[:12]}"
                resp = self.client.run_instances(**params)
            ids = [i["InstanceId"] for i in resp["Instances"]]
            log.info("launched %s for bench run %s", ids, spec.bench_run_id)
            return ids
        except Exception as e:
            raise launch_failed(self, spec, e, "run_instances") from e

    def find(self, bench_run_id: str | None = None) -> list[Instance]:
        filters = [
            {"Name": f"tag:{TAG_BENCH}", "Values": ["true"]},
            {"Name": "instance-state-name", "Values": ALIVE},
        ]
        if bench_run_id:
            filters.append({"Name": f"tag:{TAG_RUN}", "Values": [bench_run_id]})
        out = []
        for page in self.client.get_paginator("describe_instances").paginate(Filters=filters):
            for res in page["Reservations"]:
                for i in res["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                    out.append(
                        Instance(
                            "aws",
                            self.target.region,
                            i["InstanceId"],
                            i["State"]["Name"],
                            tags.get(TAG_RUN),
                            parse_iso(tags.get(TAG_EXPIRES)),
                            tags,
                        )
                    )
        return out

    def terminate(self, instance_ids: list[str]) -> None:
        if instance_ids:
            self.client.terminate_instances(InstanceIds=list(instance_ids))
