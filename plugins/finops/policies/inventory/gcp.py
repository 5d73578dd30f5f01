"""GCP: Compute Engine instances (aggregatedList) + Cloud Monitoring timeSeries.list (REST).

GPU utilisation comes from the Ops Agent (`agent.googleapis.com/gpu/utilization`, one
series per `gpu_number`); CPU from `compute.googleapis.com/instance/cpu/utilization`
(a 0..1 fraction, converted to percent). Base URLs are configurable for local servers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from finops.policies.decide import Resource, Series
from finops.policies.model import Policy
from finops.policies.rest import RestClient, TokenProvider

if TYPE_CHECKING:
    import requests

COMPUTE = "https://compute.googleapis.com"
MONITORING = "https://monitoring.googleapis.com"
_STATE = {
    "RUNNING": "running",
    "TERMINATED": "stopped",
    "STOPPING": "stopping",
    "SUSPENDED": "stopped",
    "PROVISIONING": "pending",
    "STAGING": "pending",
}


def _ts(v: str) -> datetime:
    return datetime.fromisoformat(v.replace("Z", "+00:00")).astimezone(UTC)


def _last(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def to_resource(inst: dict[str, Any], project: str) -> Resource:
    zone = _last(inst.get("zone", ""))
    gpus = sum(int(a.get("acceleratorCount", 0)) for a in inst.get("guestAccelerators", []) or [])
    return Resource(
        provider="gcp",
        account=project,
        region=zone,
        resource_id=str(inst["id"]),
        name=inst.get("name", ""),
        state=_STATE.get(inst.get("status", ""), "other"),
        launched_at=_ts(inst["creationTimestamp"]) if inst.get("creationTimestamp") else None,
        tags=dict(inst.get("labels", {}) or {}),
        instance_type=_last(inst.get("machineType", "")),
        gpu_count=gpus or None,
    )


class GcpInventory:
    provider = "gcp"

    def __init__(
        self,
        project: str,
        token: TokenProvider | None = None,
        compute_url: str = COMPUTE,
        monitoring_url: str = MONITORING,
        session: requests.Session | None = None,
    ):
        self.project = project
        self.compute = RestClient(compute_url, token, session=session)
        self.monitoring = RestClient(monitoring_url, token, session=session)
        self._raw: dict[str, dict[str, Any]] = {}

    def raw(self, resource_id: str) -> dict[str, Any]:
        """The last seen API object (actions need zone, name and labelFingerprint)."""
        return self._raw[resource_id]

    @property
    def scope(self) -> tuple[str, str | None]:
        """What list_resources() covers in full (tag snapshots replace it as a whole)."""
        return self.project, None

    def list_resources(self) -> list[Resource]:
        out: list[Resource] = []
        params: dict[str, str] = {"maxResults": "500"}
        while True:
            page = self.compute.get(f"compute/v1/projects/{self.project}/aggregated/instances", params=params)
            for scoped in (page.get("items") or {}).values():
                for inst in scoped.get("instances", []) or []:
                    self._raw[str(inst["id"])] = inst
                    out.append(to_resource(inst, self.project))
            if not page.get("nextPageToken"):
                return out
            params = {**params, "pageToken": page["nextPageToken"]}

    def refresh(self, resource: Resource) -> Resource | None:
        from finops.policies.rest import RestError

        name = self._raw.get(resource.resource_id, {}).get("name", resource.name)
        try:
            inst = self.compute.get(
                f"compute/v1/projects/{self.project}/zones/{resource.region}/instances/{name}"
            )
        except RestError as e:
            if e.status == 404:
                return None
            raise
        self._raw[str(inst["id"])] = inst
        return to_resource(inst, self.project)

    def _query(
        self, metric: str, resource: Resource, start: datetime, end: datetime, period_s: int
    ) -> list[dict]:
        params = {
            "filter": f'metric.type = "{metric}" AND resource.labels.instance_id = "{resource.resource_id}"',
            "interval.startTime": start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "interval.endTime": end.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "aggregation.alignmentPeriod": f"{period_s}s",
            "aggregation.perSeriesAligner": "ALIGN_MEAN",
        }
        out: list[dict] = []
        while True:
            page = self.monitoring.get(f"v3/projects/{self.project}/timeSeries", params=params)
            out += page.get("timeSeries", []) or []
            if not page.get("nextPageToken"):
                return out
            params = {**params, "pageToken": page["nextPageToken"]}

    @staticmethod
    def _points(ts: dict, scale: float) -> list[tuple[datetime, float]]:
        pts = []
        for p in ts.get("points", []) or []:
            val = p.get("value", {})
            v = val.get("doubleValue", val.get("int64Value"))
            if v is not None:
                pts.append((_ts(p["interval"]["endTime"]), float(v) * scale))
        return sorted(pts)

    def series(self, resource: Resource, policy: Policy, start: datetime, end: datetime) -> list[Series]:
        assert policy.idle is not None
        period = policy.idle.period_minutes * 60
        # resource_id is an API value (numeric id); it is never taken from labels.
        if not resource.resource_id.isdigit():
            return []
        out = []
        for ts in self._query(policy.metrics.gcp_gpu_metric, resource, start, end, period):
            labels = ts.get("metric", {}).get("labels", {})
            out.append(Series("gpu", self._points(ts, 1.0), f"gpu_number={labels.get('gpu_number', '?')}"))
        if policy.idle.cpu_util_below is not None:
            for ts in self._query(policy.metrics.gcp_cpu_metric, resource, start, end, period):
                out.append(Series("cpu", self._points(ts, 100.0), "cpu"))
        return out
