"""Azure: ARM Compute virtual machines (list by subscription, statusOnly for power state)
+ Azure Monitor metrics (REST). GPU utilisation on Azure VMs comes from a guest / custom
namespace (Azure Monitor agent, DCGM exporter): metric name and namespace are configurable.

Azure Monitor answers a metric with dimensions (the GPU's index / id) as ONE series averaged
over them unless the query splits it (`$filter=<dimension> eq '*'`): the GPU metric's
dimensions are read from its metric definition and the query splits by all of them, so each
GPU is its own series (one busy GPU among idle ones is busy, and every GPU must report)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from finops.policies.decide import Resource, Series
from finops.policies.model import Policy
from finops.policies.rest import RestClient, RestError, TokenProvider
from finops.prices.gpu_models import azure_gpu_divisor, known_instance

if TYPE_CHECKING:
    import requests

ARM = "https://management.azure.com"
COMPUTE_API = "2024-07-01"
MONITOR_API = "2023-10-01"
DEFINITIONS_API = "2018-01-01"
_POWER = {
    "PowerState/running": "running",
    "PowerState/deallocated": "stopped",
    "PowerState/stopped": "stopped",
    "PowerState/deallocating": "stopping",
    "PowerState/stopping": "stopping",
    "PowerState/starting": "pending",
}


def _ts(v: str) -> datetime:
    return datetime.fromisoformat(v.replace("Z", "+00:00")).astimezone(UTC)


def to_resource(vm: dict[str, Any], subscription: str) -> Resource:
    props = vm.get("properties", {}) or {}
    statuses = (props.get("instanceView") or {}).get("statuses", []) or []
    power = next((s.get("code") for s in statuses if str(s.get("code", "")).startswith("PowerState/")), None)
    created = props.get("timeCreated")
    size = (props.get("hardwareProfile") or {}).get("vmSize", "")
    # ARM's VM listing does not say how many GPUs a size has: the static size table does (an
    # unknown size keeps None, and then every reporting GPU counts); sizes match without case
    spec = known_instance("azure", size) if isinstance(size, str) else None
    gpus = spec.gpu_count if spec else None
    if gpus is None and azure_gpu_divisor(size) > 1:
        gpus = 1  # a partitioned size (NV6ads_A10_v5: 1/6 of an A10) shows the VM one partial GPU
    return Resource(
        provider="azure",
        account=subscription,
        region=vm.get("location", ""),
        resource_id=vm["id"],
        name=vm.get("name", ""),
        state=_POWER.get(power or "", "other"),
        launched_at=_ts(created) if created else None,
        tags=dict(vm.get("tags", {}) or {}),
        instance_type=size,
        gpu_count=gpus,
    )


class AzureInventory:
    provider = "azure"

    def __init__(
        self,
        subscription: str,
        token: TokenProvider | None = None,
        base_url: str = ARM,
        gpu_metric_namespace: str | None = None,
        session: requests.Session | None = None,
    ):
        self.subscription = subscription
        self.arm = RestClient(base_url, token, session=session)
        self.gpu_ns = gpu_metric_namespace

    @property
    def scope(self) -> tuple[str, str | None]:
        """What list_resources() covers in full (tag snapshots replace it as a whole)."""
        return self.subscription, None

    def list_resources(self) -> list[Resource]:
        out: list[Resource] = []
        url: str | None = f"subscriptions/{self.subscription}/providers/Microsoft.Compute/virtualMachines"
        params: dict[str, str] | None = {"api-version": COMPUTE_API, "statusOnly": "true"}
        while url:
            page = self.arm.get(url, params=params)
            out += [to_resource(vm, self.subscription) for vm in page.get("value", []) or []]
            url, params = page.get("nextLink"), None  # nextLink carries its own query string
        return out

    def refresh(self, resource: Resource) -> Resource | None:
        try:
            vm = self.arm.get(
                resource.resource_id, params={"api-version": COMPUTE_API, "$expand": "instanceView"}
            )
        except RestError as e:
            if e.status == 404:
                return None
            raise
        # GET with $expand=instanceView returns it under properties.instanceView, like statusOnly.
        return to_resource(vm, self.subscription)

    def _dimensions(self, resource: Resource, name: str, namespace: str | None) -> list[str]:
        """The dimensions of metric `name` on this VM (metricDefinitions); none known: []."""
        params = {"api-version": DEFINITIONS_API}
        if namespace:
            params["metricnamespace"] = namespace
        try:
            body = self.arm.get(
                f"{resource.resource_id}/providers/Microsoft.Insights/metricDefinitions", params=params
            )
        except RestError as e:
            if e.status == 404:
                return []
            raise
        for d in body.get("value", []) or []:
            if str((d.get("name") or {}).get("value", "")).casefold() == name.casefold():
                return [str(x["value"]) for x in d.get("dimensions", []) or [] if x.get("value")]
        return []

    def _metric(
        self,
        resource: Resource,
        name: str,
        namespace: str | None,
        start: datetime,
        end: datetime,
        period_min: int,
        split: list[str] | None = None,
    ) -> list[dict]:
        params = {
            "api-version": MONITOR_API,
            "metricnames": name,
            "timespan": f"{start.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}/{end.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}",
            "interval": f"PT{period_min}M",
            "aggregation": "Average",
        }
        if namespace:
            params["metricnamespace"] = namespace
        if split:  # one series per dimension value, not their average; `top` (default 10) caps the series
            params["$filter"] = " and ".join(f"{d} eq '*'" for d in split)
            params["top"] = "100"
        body = self.arm.get(f"{resource.resource_id}/providers/Microsoft.Insights/metrics", params=params)
        return body.get("value", []) or []

    @staticmethod
    def _points(ts: dict) -> list[tuple[datetime, float]]:
        return sorted(
            (_ts(p["timeStamp"]), float(p["average"]))
            for p in ts.get("data", []) or []
            if p.get("average") is not None
        )

    def series(self, resource: Resource, policy: Policy, start: datetime, end: datetime) -> list[Series]:
        assert policy.idle is not None
        pm = policy.idle.period_minutes
        out: list[Series] = []
        gpu_metric = policy.metrics.azure_gpu_metric
        split = self._dimensions(resource, gpu_metric, self.gpu_ns)
        for metric in self._metric(resource, gpu_metric, self.gpu_ns, start, end, pm, split):
            for ts in metric.get("timeseries", []) or []:
                meta = ",".join(
                    f"{m['name']['value']}={m['value']}" for m in ts.get("metadatavalues", []) or []
                )
                out.append(Series("gpu", self._points(ts), meta or "gpu"))
        if policy.idle.cpu_util_below is not None:
            for metric in self._metric(resource, policy.metrics.azure_cpu_metric, None, start, end, pm):
                for ts in metric.get("timeseries", []) or []:
                    out.append(Series("cpu", self._points(ts), "Percentage CPU"))
        return out
