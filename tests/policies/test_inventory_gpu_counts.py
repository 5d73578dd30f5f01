"""GPU counts in the inventories (AWS from EC2 DescribeInstanceTypes against a moto server, Azure
from the VM size table), so an idle decision needs every GPU of the instance to report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from finops.policies.actions.aws import AwsActions
from finops.policies.engine import Cloud, run_policy
from finops.policies.inventory.aws import AwsInventory
from tests.fixtures.policies import pol_put_gpu

OWNER = {"owner": "alice@example.com", "team": "ml"}


def _cloud(conn: str) -> Cloud:
    inv = AwsInventory(conn, "us-east-1")
    return Cloud(inv, AwsActions(conn, "us-east-1", ec2=inv.ec2))


def test_gpu_count_comes_from_the_instance_type(aws_conn, pol_boto, pol_launch):
    ids = {t: pol_launch(t, OWNER, itype=t) for t in ("p4d.24xlarge", "g5.xlarge", "m5.large")}
    got = {r.resource_id: r.gpu_count for r in AwsInventory(aws_conn, "us-east-1").list_resources()}
    assert got == {ids["p4d.24xlarge"]: 8, ids["g5.xlarge"]: 1, ids["m5.large"]: None}


def test_an_instance_with_silent_gpus_is_never_idle(
    aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh, pol_alerts
):
    """A p4d (8 GPUs) whose metrics show 2 idle GPUs and nothing for the other 6 (an agent
    that lost them, or a DCGM exporter scraping a subset) was judged idle and stopped."""
    partial = pol_launch("two-of-eight", OWNER, itype="p4d.24xlarge")
    whole = pol_launch("eight-of-eight", OWNER, itype="p4d.24xlarge")
    pol_put_gpu(pol_boto["cw"], partial, 0.5, 8.5, gpus=2)
    pol_put_gpu(pol_boto["cw"], whole, 0.5, 8.5, gpus=8)
    run_policy(pol_policy(), _cloud(aws_conn), duckdb_wh, run_id="r-gpus")
    rows = dict(
        duckdb_wh.query(
            "SELECT resource_id, decision || ': ' || reason FROM policy_actions WHERE run_id = ?", ["r-gpus"]
        )
    )
    assert rows[partial] == "partial_metrics: 2 of 8 GPUs report metrics"
    assert rows[whole].startswith("idle:")


def test_the_shipped_iam_policy_allows_the_inventory_reads():
    import json
    from pathlib import Path

    doc = json.loads(
        (
            Path(__file__).resolve().parents[2] / "include" / "iam" / "finops-stop-instances-policy.json"
        ).read_text()
    )
    allowed = {a for s in doc["Statement"] if s["Effect"] == "Allow" for a in s["Action"]}
    assert {"ec2:DescribeInstances", "ec2:DescribeInstanceTypes", "cloudwatch:GetMetricData"} <= allowed


def test_azure_vm_sizes_carry_their_gpu_count():
    from finops.policies.inventory.azure import to_resource

    def vm(size: str) -> dict:
        return {
            "id": f"/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/{size}",
            "name": size,
            "location": "eastus",
            "properties": {"hardwareProfile": {"vmSize": size}},
        }

    assert to_resource(vm("Standard_ND96isr_H100_v5"), "s").gpu_count == 8
    assert to_resource(vm("Standard_NC24ads_A100_v4"), "s").gpu_count == 1
    assert to_resource(vm("Standard_D2s_v5"), "s").gpu_count is None


def test_azure_vm_size_is_matched_whatever_its_case(pol_azure, pol_policy, duckdb_wh, pol_alerts):
    """ARM keeps a VM's size in the case it was created with (`az vm create --size
    standard_nd96isr_h100_v5` lists as written): the size table is keyed Standard_ND96isr_H100_v5,
    so such a VM had no GPU count, and an 8-GPU VM whose metrics answer covered one GPU was judged
    idle and deallocated."""
    from finops.policies.actions.azure import AzureActions
    from finops.policies.decide import format_mark
    from finops.policies.inventory.azure import AzureInventory
    from tests.fixtures.policies import pol_points

    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    vid = pol_azure.add("nd-lower", {**OWNER, "finops-idle-marked": old}).lower()
    pol_azure.vms[vid]["properties"]["hardwareProfile"]["vmSize"] = "standard_nd96isr_h100_v5"
    pol_azure.gpu[vid] = pol_points(0.5, 8.5)  # one series: the other 7 GPUs say nothing
    inv = AzureInventory(pol_azure.sub, lambda: "tok", pol_azure.url)
    assert [r.gpu_count for r in inv.list_resources()] == [8]
    run_policy(
        pol_policy(scope={"providers": ["azure"]}),
        Cloud(inv, AzureActions(inv)),
        duckdb_wh,
        dry_run=False,
        run_id="az-case",
    )
    [(decision, action, reason)] = duckdb_wh.query(
        "SELECT decision, action, reason FROM policy_actions WHERE run_id = ?", ["az-case"]
    )
    assert (decision, action, reason) == ("partial_metrics", "none", "1 of 8 GPUs report metrics")
    assert pol_azure.vms[vid]["properties"]["instanceView"]["statuses"][1]["code"] == "PowerState/running"
    assert not [c for c in pol_azure.calls if c[1].endswith("/deallocate")]


def test_gpu_count_without_describe_instance_types_permission(
    aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh, pol_alerts, monkeypatch
):
    """A deployment still on the IAM policy shipped before DescribeInstanceTypes was needed (the
    read actions below, from include/iam before 8fbce60): EC2 refuses to describe the type, and
    the p4d.24xlarge whose metrics showed 2 idle GPUs of 8 was judged idle and stopped, as if the
    count were unknown. The instance-type table knows a p4d has 8 GPUs."""
    from finops.policies.decide import format_mark
    from tests.fixtures.policies import iam_enforced

    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    iid = pol_launch("two-of-eight", {**OWNER, "finops-idle-marked": old}, itype="p4d.24xlarge")
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5, gpus=2)
    reads = [
        "ec2:DescribeInstances",
        "ec2:DescribeTags",
        "cloudwatch:GetMetricData",
        "cloudwatch:ListMetrics",
        "sts:GetCallerIdentity",
        "ec2:StopInstances",
        "ec2:CreateTags",
        "ec2:DeleteTags",
    ]
    with iam_enforced(pol_boto, monkeypatch, reads) as conn:
        inv = AwsInventory(conn, "us-east-1", account="123456789012")
        with pytest.raises(inv.ec2.exceptions.ClientError, match="DescribeInstanceTypes"):
            inv.ec2.describe_instance_types(InstanceTypes=["p4d.24xlarge"])
        assert [r.gpu_count for r in inv.list_resources()] == [8]
        run_policy(
            pol_policy(),
            Cloud(inv, AwsActions(conn, "us-east-1", ec2=inv.ec2)),
            duckdb_wh,
            dry_run=False,
            run_id="r-noperm",
        )
    [(decision, action, reason)] = duckdb_wh.query(
        "SELECT decision, action, reason FROM policy_actions WHERE run_id = ?", ["r-noperm"]
    )
    assert (decision, action, reason) == ("partial_metrics", "none", "2 of 8 GPUs report metrics")
    [res] = pol_boto["ec2"].describe_instances(InstanceIds=[iid])["Reservations"]
    assert res["Instances"][0]["State"]["Name"] == "running"


class _AzureMonitorPerGpu:
    """Azure Monitor as documented for a metric with a dimension (here the GPU's `gpuId`):
    metricDefinitions lists the dimension; a metrics query without `$filter` answers ONE series
    aggregated over every GPU (their average), `$filter=gpuId eq '*'` one series per GPU, told
    apart by metadatavalues. The VMs and actions are the ARM fake's."""

    def __init__(self, base: str):
        from tests.fixtures.policies import PolFakeAzure

        self.arm = PolFakeAzure(base)
        self.per_gpu: dict[str, list[list[tuple[datetime, float]]]] = {}  # vm id (lower) -> per GPU points
        self.filters: list[str | None] = []

    def handler(self, request):  # type: ignore[no-untyped-def]
        import json

        from werkzeug import Response

        def js(body, status=200):  # type: ignore[no-untyped-def]
            return Response(json.dumps(body), status=status, content_type="application/json")

        path = request.path
        if path.endswith("/providers/Microsoft.Insights/metricDefinitions"):
            vid = path.split("/providers/Microsoft.Insights")[0]
            return js(
                {
                    "value": [
                        {
                            "id": f"{vid}/providers/microsoft.insights/metricdefinitions/GPU Utilization",
                            "resourceId": vid,
                            "namespace": "azure.vm.linux.guestmetrics",
                            "name": {"value": "GPU Utilization", "localizedValue": "GPU Utilization"},
                            "isDimensionRequired": False,
                            "unit": "Percent",
                            "primaryAggregationType": "Average",
                            "dimensions": [{"value": "gpuId", "localizedValue": "gpuId"}],
                        },
                    ]
                }
            )
        if (
            path.endswith("/providers/Microsoft.Insights/metrics")
            and request.args.get("metricnames") == "GPU Utilization"
        ):
            vid = path.split("/providers/Microsoft.Insights")[0].lower()
            flt = request.args.get("$filter")
            self.filters.append(flt)
            gpus = self.per_gpu.get(vid, [])

            def series(pts, meta):  # type: ignore[no-untyped-def]
                return {
                    "metadatavalues": meta,
                    "data": [
                        {"timeStamp": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "average": v}
                        for t, v in reversed(pts)
                    ],
                }

            if flt == "gpuId eq '*'":
                ts = [
                    series(p, [{"name": {"value": "gpuId", "localizedValue": "gpuId"}, "value": str(i)}])
                    for i, p in enumerate(gpus)
                ]
            elif flt is None:
                avg = (
                    [(t, sum(p[k][1] for p in gpus) / len(gpus)) for k, (t, _) in enumerate(gpus[0])]
                    if gpus
                    else []
                )
                ts = [series(avg, [])] if avg else []
            else:
                return js({"code": "BadRequest", "message": f"unknown dimension in {flt}"}, 400)
            return js(
                {
                    "cost": 0,
                    "timespan": request.args.get("timespan"),
                    "interval": "PT5M",
                    "namespace": "azure.vm.linux.guestmetrics",
                    "resourceregion": "eastus",
                    "value": [
                        {
                            "id": f"{vid}/providers/Microsoft.Insights/metrics/GPU Utilization",
                            "type": "Microsoft.Insights/metrics",
                            "name": {"value": "GPU Utilization", "localizedValue": "GPU Utilization"},
                            "unit": "Percent",
                            "timeseries": ts,
                            "errorCode": "Success",
                        }
                    ],
                }
            )
        return self.arm.handler(request)


def test_azure_gpus_are_read_one_by_one_not_averaged(httpserver, pol_policy, duckdb_wh, pol_alerts):
    """Azure Monitor averages a metric over its dimensions unless the query splits it ($filter
    <dim> eq '*'). The GPU query never split, so an 8-GPU VM training on one GPU (30%) and
    idle on seven read as one series at 3.75%: below 5%, idle, and (marked 30 h ago) deallocated.
    A size outside the table (Standard_ND40rs_v2, 8 x V100) has no count to fall back on; one in
    it read '1 of 8 GPUs report metrics' on every run and was never stopped."""
    import re

    from finops.policies.actions.azure import AzureActions
    from finops.policies.decide import format_mark
    from finops.policies.inventory.azure import AzureInventory
    from tests.fixtures.policies import pol_points

    fake = _AzureMonitorPerGpu(httpserver.url_for("/").rstrip("/"))
    httpserver.expect_request(re.compile(".*")).respond_with_handler(fake.handler)
    old = format_mark(datetime.now(UTC) - timedelta(hours=30))
    busy = fake.arm.add("nd40-one-gpu-busy", {**OWNER, "finops-idle-marked": old}).lower()
    idle = fake.arm.add("nd96-all-idle", {**OWNER, "finops-idle-marked": old}).lower()
    fake.arm.vms[busy]["properties"]["hardwareProfile"]["vmSize"] = "Standard_ND40rs_v2"
    fake.arm.vms[idle]["properties"]["hardwareProfile"]["vmSize"] = "Standard_ND96isr_H100_v5"
    fake.per_gpu[busy] = [pol_points(30.0 if g == 0 else 0.0, 8.5) for g in range(8)]
    fake.per_gpu[idle] = [pol_points(0.5, 8.5) for _ in range(8)]
    inv = AzureInventory(fake.arm.sub, lambda: "tok", fake.arm.base)
    run_policy(
        pol_policy(scope={"providers": ["azure"]}),
        Cloud(inv, AzureActions(inv)),
        duckdb_wh,
        dry_run=False,
        run_id="az-split",
    )
    rows = {
        n: (d, a)
        for n, d, a in duckdb_wh.query(
            "SELECT resource_name, decision, action FROM policy_actions WHERE run_id = ?", ["az-split"]
        )
    }
    assert rows == {"nd40-one-gpu-busy": ("busy", "unmark"), "nd96-all-idle": ("idle", "stop")}
    power = {
        n: fake.arm.vms[v]["properties"]["instanceView"]["statuses"][1]["code"]
        for n, v in (("busy", busy), ("idle", idle))
    }
    assert power == {"busy": "PowerState/running", "idle": "PowerState/deallocated"}
    assert set(fake.filters) == {"gpuId eq '*'"}


def _put_instance_series(cw, iid: str, now: datetime) -> None:  # type: ignore[no-untyped-def]
    """An hour and a half of the agent's per-instance GPU series: InstanceId, no GPU index."""
    from tests.fixtures.policies import GPU_METRIC, GPU_NS

    data = [
        {
            "MetricName": GPU_METRIC,
            "Timestamp": now - timedelta(minutes=5 * i + 1),
            "Value": 0.5,
            "Unit": "Percent",
            "Dimensions": [{"Name": "InstanceId", "Value": iid}],
        }
        for i in range(18)
    ]
    cw.put_metric_data(Namespace=GPU_NS, MetricData=data)


def test_an_instance_level_aggregate_series_is_not_one_more_gpu(
    aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh, pol_alerts
):
    """The CloudWatch agent can publish a per-instance series (InstanceId only) beside the
    per-GPU ones (InstanceId + index): read as one more GPU, 7 reporting GPUs of 8 plus the
    aggregate made 8, and the instance was judged idle although one GPU said nothing."""
    from finops.policies.decide import Resource

    iid = pol_launch("seven-of-eight", OWNER, itype="p4d.24xlarge")
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 1.5, gpus=7)
    now = datetime.now(UTC)
    _put_instance_series(pol_boto["cw"], iid, now)
    policy = pol_policy(idle={"hours": 1})
    inv = AwsInventory(aws_conn, "us-east-1")
    labels = [
        s.label
        for s in inv.series(Resource("aws", "", "us-east-1", iid), policy, now - timedelta(hours=1), now)
    ]
    assert sorted(labels) == [f"index={g}" for g in range(7)]
    run_policy(policy, _cloud(aws_conn), duckdb_wh, run_id="r-agg")
    (row,) = duckdb_wh.query(
        "SELECT decision || ': ' || reason FROM policy_actions WHERE run_id = ?", ["r-agg"]
    )
    assert row[0] == "partial_metrics: 7 of 8 GPUs report metrics"


def test_an_instance_level_series_alone_still_counts(aws_conn, pol_boto, pol_launch, pol_policy):
    """An agent that publishes only the per-instance series (no per-GPU ones) keeps its data."""
    from finops.policies.decide import Resource

    iid = pol_launch("aggregate-only", OWNER)
    now = datetime.now(UTC)
    _put_instance_series(pol_boto["cw"], iid, now)
    series = AwsInventory(aws_conn, "us-east-1").series(
        Resource("aws", "", "us-east-1", iid), pol_policy(idle={"hours": 1}), now - timedelta(hours=1), now
    )
    assert [s.label for s in series] == ["gpu"] and len(series[0].points) >= 12
