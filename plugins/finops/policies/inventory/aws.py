"""AWS: EC2 instances (describe_instances) + CloudWatch GetMetricData, through the Amazon
provider's AwsBaseHook (so `endpoint_url` in the connection extra reaches moto / LocalStack).

GPU utilisation is whatever the CloudWatch agent (nvidia_smi plugin) or a DCGM exporter
publishes: namespace, metric and instance dimension are configurable per policy, and every
series carrying the instance dimension (one per GPU index) is read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from finops.policies.decide import Resource, Series
from finops.policies.model import Policy
from finops.prices.gpu_models import known_instance

log = logging.getLogger(__name__)

_STATE = {"running": "running", "stopped": "stopped", "stopping": "stopping", "pending": "pending"}


def _client(conn_id: str, region: str, service: str) -> Any:
    from finops.connections import aws_client

    return aws_client(conn_id, service, region)


def to_resource(inst: dict[str, Any], account: str, region: str) -> Resource:
    tags = {t["Key"]: t.get("Value", "") for t in inst.get("Tags", []) or []}
    launched = inst.get("LaunchTime")
    if isinstance(launched, datetime) and launched.tzinfo is None:
        launched = launched.replace(tzinfo=UTC)
    return Resource(
        provider="aws",
        account=account,
        region=region,
        resource_id=inst["InstanceId"],
        name=tags.get("Name", ""),
        state=_STATE.get(inst.get("State", {}).get("Name", ""), "other"),
        launched_at=launched,
        tags=tags,
        instance_type=inst.get("InstanceType", ""),
    )


def _per_gpu(dim_sets: set[tuple]) -> set[tuple]:
    """Drop aggregate series: one whose dimensions are a strict subset of another's sums over it
    (the agent's per-instance series, InstanceId only, beside the per-GPU InstanceId + index
    ones; with append_dimensions, InstanceType / ImageId on both). Counted as a GPU, it made 7
    reporting GPUs of 8 look like 8. An aggregate published alone is kept: it is all there is."""
    return {k for k in dim_sets if not any(set(k) < set(o) for o in dim_sets)}


class AwsInventory:
    provider = "aws"

    def __init__(self, conn_id: str = "aws_default", region: str = "us-east-1", account: str | None = None):
        self.conn_id, self.region = conn_id, region
        self.ec2 = _client(conn_id, region, "ec2")
        self.cw = _client(conn_id, region, "cloudwatch")
        self.account = account or _client(conn_id, region, "sts").get_caller_identity()["Account"]
        self._gpus: dict[str, int | None] = {}  # instance type -> GPUs (None: EC2 would not say)

    @property
    def scope(self) -> tuple[str, str | None]:
        """What list_resources() covers in full (tag snapshots replace it as a whole)."""
        return self.account, self.region

    def list_resources(self, instance_ids: list[str] | None = None) -> list[Resource]:
        kw: dict[str, Any] = (
            {"InstanceIds": instance_ids}
            if instance_ids
            else {
                "Filters": [
                    {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}
                ]
            }
        )
        out: list[Resource] = []
        for page in self.ec2.get_paginator("describe_instances").paginate(**kw):
            for res in page.get("Reservations", []):
                out += [to_resource(i, self.account, self.region) for i in res.get("Instances", [])]
        gpus = self._gpu_counts({r.instance_type for r in out if r.instance_type})
        return [replace(r, gpu_count=gpus.get(r.instance_type)) for r in out]

    def _gpu_counts(self, types: set[str]) -> dict[str, int | None]:
        """GPUs per instance type from EC2's DescribeInstanceTypes (GpuInfo), cached: with the
        count known, an instance is idle only when every one of its GPUs reports (decide.py).
        A type EC2 will not describe (ec2:DescribeInstanceTypes denied, as under the IAM policy
        shipped before it was needed; an unknown type) takes the instance-type table's count;
        one in neither keeps None and is logged: its GPUs are then judged by whatever series exist."""
        todo = sorted(types - self._gpus.keys())
        for i in range(0, len(todo), 100):  # the API takes up to 100 types per call
            chunk = todo[i : i + 100]
            try:
                self._describe_types(chunk)
            except self.ec2.exceptions.ClientError:
                for t in chunk:  # one unknown type fails the whole call: ask one by one
                    try:
                        self._describe_types([t])
                    except self.ec2.exceptions.ClientError as e:
                        spec = known_instance("aws", t)
                        self._gpus[t] = spec.gpu_count if spec else None
                        log.warning(
                            "EC2 did not describe %s (%s): GPU count %s",
                            t,
                            e,
                            f"{spec.gpu_count} from the instance-type table"
                            if spec
                            else "unknown, every reporting GPU counts",
                        )
        return self._gpus

    def _describe_types(self, types: list[str]) -> None:
        for page in self.ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=types):
            for t in page.get("InstanceTypes", []):
                n = sum(int(g.get("Count", 0)) for g in (t.get("GpuInfo") or {}).get("Gpus", []) or [])
                self._gpus[t["InstanceType"]] = n or None

    def refresh(self, resource: Resource) -> Resource | None:
        try:
            found = self.list_resources([resource.resource_id])
        except self.ec2.exceptions.ClientError as e:
            if "NotFound" in str(e):
                return None
            raise
        return found[0] if found else None

    def _gpu_metrics(self, policy: Policy, instance_id: str) -> list[dict[str, Any]]:
        m = policy.metrics
        metrics: list[dict[str, Any]] = []
        for page in self.cw.get_paginator("list_metrics").paginate(
            Namespace=m.gpu_namespace,
            MetricName=m.gpu_metric,
            Dimensions=[{"Name": m.gpu_instance_dimension, "Value": instance_id}],
        ):
            metrics += page.get("Metrics", [])
        # One entry per distinct dimension set (some endpoints repeat a metric).
        uniq: dict[tuple, dict[str, Any]] = {}
        for m_ in metrics:
            key = tuple(sorted((d["Name"], d["Value"]) for d in m_.get("Dimensions", [])))
            uniq.setdefault(key, m_)
        return [uniq[k] for k in sorted(_per_gpu(set(uniq)))]

    def series(self, resource: Resource, policy: Policy, start: datetime, end: datetime) -> list[Series]:
        assert policy.idle is not None
        period = policy.idle.period_minutes * 60
        queries: list[dict[str, Any]] = []
        labels: dict[str, tuple[str, str]] = {}
        for i, metric in enumerate(self._gpu_metrics(policy, resource.resource_id)):
            qid = f"gpu{i}"
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            label = ",".join(
                f"{k}={v}" for k, v in sorted(dims.items()) if k != policy.metrics.gpu_instance_dimension
            )
            labels[qid] = ("gpu", label or "gpu")
            queries.append({"Id": qid, "MetricStat": {"Metric": metric, "Period": period, "Stat": "Average"}})
        inst_dim = [{"Name": "InstanceId", "Value": resource.resource_id}]
        if policy.idle.cpu_util_below is not None:
            labels["cpu"] = ("cpu", "CPUUtilization")
            queries.append(
                {
                    "Id": "cpu",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/EC2",
                            "MetricName": policy.metrics.cpu_metric,
                            "Dimensions": inst_dim,
                        },
                        "Period": period,
                        "Stat": "Average",
                    },
                }
            )
        if policy.idle.network_below_bytes_per_s is not None:
            for name in ("NetworkIn", "NetworkOut"):
                labels[name.lower()] = ("network", name)
                queries.append(
                    {
                        "Id": name.lower(),
                        "MetricStat": {
                            "Metric": {"Namespace": "AWS/EC2", "MetricName": name, "Dimensions": inst_dim},
                            "Period": period,
                            "Stat": "Sum",
                        },
                    }
                )
        if not queries:
            return []
        points: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
            if token:
                kw["NextToken"] = token
            resp = self.cw.get_metric_data(**kw)
            for r in resp.get("MetricDataResults", []):
                for t, v in zip(r.get("Timestamps", []), r.get("Values", []), strict=False):
                    points[r["Id"]].append((t if t.tzinfo else t.replace(tzinfo=UTC), float(v)))
            token = resp.get("NextToken")
            if not token:
                break
        out = [Series("gpu", sorted(points[q]), labels[q][1]) for q in labels if labels[q][0] == "gpu"]
        if "cpu" in labels:
            out.append(Series("cpu", sorted(points["cpu"]), "CPUUtilization"))
        if "networkin" in labels:
            # Bytes per period (Sum) -> bytes/s; only timestamps where both directions reported.
            nin, nout = dict(points["networkin"]), dict(points["networkout"])
            both = sorted((t, (nin[t] + nout[t]) / period) for t in nin.keys() & nout.keys())
            out.append(Series("network", both, "NetworkIn+Out"))
        return out
