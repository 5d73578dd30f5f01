"""A small GPU fleet in moto EC2 + CloudWatch for the policies to judge (the demo, and the
policy tests through tests/fixtures/policies.py).

GPU utilisation is published the way the CloudWatch agent's nvidia_smi plugin does: metric
`nvidia_smi_utilization_gpu` in namespace CWAgent, one series per GPU (dimensions InstanceId
and index), 5-minute points. moto has no API for an instance's LaunchTime, so `launch` sets
it on moto's backend, which is only reachable when moto runs in this process (moto's
ThreadedMotoServer or its decorators).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

GPU_NS, GPU_METRIC = "CWAgent", "nvidia_smi_utilization_gpu"
DEMO_AMI = "ami-12c6146b"  # an image id moto knows


def put_gpu_metrics(
    cw: Any,
    instance_id: str,
    value: float | Callable[[int], float],
    hours: float,
    gpus: int = 1,
    end: datetime | None = None,
    start_offset_h: float = 0.0,
) -> None:
    """Seed 5-minute GPU utilisation points for `hours` back from `end` (per GPU index);
    `value(i)` gets the point's index, newest first."""
    end = end or datetime.now(UTC)
    n = int(hours * 12)
    data = []
    for g in range(gpus):
        for i in range(n):
            ts = end - timedelta(minutes=5 * i + 1) - timedelta(hours=start_offset_h)
            v = value(i) if callable(value) else value
            data.append(
                {
                    "MetricName": GPU_METRIC,
                    "Timestamp": ts,
                    "Value": float(v),
                    "Unit": "Percent",
                    "Dimensions": [
                        {"Name": "InstanceId", "Value": instance_id},
                        {"Name": "index", "Value": str(g)},
                    ],
                }
            )
    _put(cw, GPU_NS, data)


def put_cpu_metrics(
    cw: Any, instance_id: str, value: float, hours: float, end: datetime | None = None
) -> None:
    """5-minute EC2 CPUUtilization points (namespace AWS/EC2, as EC2 publishes them), the idle
    policy's second signal."""
    end = end or datetime.now(UTC)
    _put(
        cw,
        "AWS/EC2",
        [
            {
                "MetricName": "CPUUtilization",
                "Timestamp": end - timedelta(minutes=5 * i + 1),
                "Value": float(value),
                "Unit": "Percent",
                "Dimensions": [{"Name": "InstanceId", "Value": instance_id}],
            }
            for i in range(int(hours * 12))
        ],
    )


def _put(cw: Any, namespace: str, data: list[dict[str, Any]]) -> None:
    for i in range(0, len(data), 500):
        cw.put_metric_data(Namespace=namespace, MetricData=data[i : i + 500])


def launch(
    ec2: Any, name: str, tags: dict[str, str] | None = None, itype: str = "g5.xlarge", age_h: float = 48.0
) -> str:
    """Run one instance named `name` with `tags`, launched `age_h` hours ago (see the module
    docstring); `ec2` is a boto3 EC2 client on moto. Returns the instance id."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    all_tags = {"Name": name, **(tags or {})}
    resp = ec2.run_instances(
        ImageId=DEMO_AMI,
        MinCount=1,
        MaxCount=1,
        InstanceType=itype,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items()]}
        ],
    )
    iid = resp["Instances"][0]["InstanceId"]
    region = ec2.meta.region_name
    inst = ec2_backends[DEFAULT_ACCOUNT_ID][region].get_instance(iid)
    inst.launch_time = (datetime.now(UTC) - timedelta(hours=age_h)).replace(tzinfo=None)
    return iid


def instances(ec2: Any) -> dict[str, dict[str, Any]]:
    """State, type and tags of every instance, by id (to show a dry run changed nothing)."""
    out = {}
    for res in ec2.describe_instances()["Reservations"]:
        for i in res["Instances"]:
            out[i["InstanceId"]] = {
                "state": i["State"]["Name"],
                "type": i["InstanceType"],
                "tags": {t["Key"]: t["Value"] for t in i.get("Tags", [])},
            }
    return out


@dataclass(frozen=True)
class DemoInstance:
    """One instance of the demo fleet and the GPU utilisation it reports."""

    name: str
    itype: str
    gpus: int
    util: float  # GPU percent, every 5-minute point of the last 12 hours
    cpu: float  # CPU percent, likewise
    tags: dict[str, str]
    why: str  # what the policies should find


_OWNED = {"team": "ml-research", "owner": "ana@example.com", "cost-center": "cc-1234", "env": "prod"}
DEMO_FLEET: tuple[DemoInstance, ...] = (
    DemoInstance(
        "llm-pretrain-01",
        "p4d.24xlarge",
        gpus=8,
        util=87.0,
        cpu=60.0,
        tags=_OWNED,
        why="busy, fully tagged: compliant, not idle",
    ),
    DemoInstance(
        "notebook-ana",
        "g5.xlarge",
        gpus=1,
        util=0.5,
        cpu=2.0,
        tags={**_OWNED, "env": "dev", "finops:auto-stop": "enabled"},
        why="idle 12 h, opted in to auto-stop: would be marked for stop (dry run: nothing happens)",
    ),
    DemoInstance(
        "eval-sweep-7",
        "g5.2xlarge",
        gpus=1,
        util=1.0,
        cpu=3.0,
        tags={"team": "ml-research", "owner": "bo@example.com"},
        why="idle, not opted in: reported only; no cost-center, no env",
    ),
    DemoInstance(
        "mystery-gpu",
        "g6.xlarge",
        gpus=1,
        util=45.0,
        cpu=30.0,
        tags={"Project": "vision"},
        why="busy, untagged: no team / owner / cost-center / env",
    ),
)


def build_demo_fleet(ec2: Any, cw: Any) -> dict[str, DemoInstance]:
    """Launch DEMO_FLEET (two days old) with 12 hours of GPU and CPU metrics each. Returns id -> spec."""
    out = {}
    for spec in DEMO_FLEET:
        iid = launch(ec2, spec.name, spec.tags, itype=spec.itype, age_h=48)
        put_gpu_metrics(cw, iid, spec.util, hours=12, gpus=spec.gpus)
        put_cpu_metrics(cw, iid, spec.cpu, hours=12)
        out[iid] = spec
    return out
