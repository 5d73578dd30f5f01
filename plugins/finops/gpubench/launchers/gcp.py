"""GCP Compute Engine launcher (REST `instances.insert` with a startup-script; results to GCS
with the VM's service account).

Safety is native here: `scheduling.maxRunDuration` + `instanceTerminationAction=DELETE` make
Compute Engine delete the VM after the TTL even if our script never runs; `requestId` makes a
retried insert idempotent. Labels carry the tags in GCP's label alphabet (expiry as epoch s).
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from finops.gpubench.launchers.base import (
    NAME_PREFIX,
    CapReached,
    Instance,
    LaunchSpec,
    launch_failed,
)
from finops.gpubench.launchers.rest import ApiError, RestClient
from finops.gpubench.settings import Target

log = logging.getLogger(__name__)
DEFAULT_BASE = "https://compute.googleapis.com/compute/v1"
L_BENCH, L_RUN, L_DAG, L_EXPIRES = (
    "finops-benchmark",
    "finops-bench-run-id",
    "finops-dag-id",
    "finops-expires-at",
)


def label_value(v: str) -> str:
    """GCP label values: <= 63 chars of lowercase letters, digits, '_' and '-'."""
    return re.sub(r"[^a-z0-9_-]", "-", v.lower())[:63]


class GcpLauncher:
    provider = "gcp"

    def __init__(self, api: RestClient, target: Target, max_running: int = 8):
        self.api = api
        self.target = target
        self.max_running = max_running

    @classmethod
    def from_conn(cls, conn_id: str, target: Target, max_running: int = 8) -> GcpLauncher:
        from finops import connections

        token = connections.gcp_token(conn_id)
        return cls(
            RestClient(DEFAULT_BASE, token, session=connections.http_session(conn_id)), target, max_running
        )

    @property
    def _project(self) -> str:
        return f"/projects/{self.target.project}"

    def body(self, spec: LaunchSpec) -> dict[str, Any]:
        t = self.target
        zone = t.zone
        labels = {
            L_BENCH: "true",
            L_RUN: spec.bench_run_id,
            L_DAG: label_value(spec.dag_id),
            L_EXPIRES: str(int(spec.expires_at.timestamp())),
        }
        body: dict[str, Any] = {
            "name": NAME_PREFIX + spec.bench_run_id,
            "machineType": f"zones/{zone}/machineTypes/{spec.instance_type}",
            "labels": labels,
            "disks": [
                {
                    "boot": True,
                    "autoDelete": True,
                    "initializeParams": {
                        "sourceImage": t.image,
                        "diskSizeGb": str(t.root_volume_gib),
                        "labels": labels,
                    },
                }
            ],
            "networkInterfaces": [
                {
                    "network": "global/networks/default",
                    "accessConfigs": [{"type": "ONE_TO_ONE_NAT", "name": "External NAT"}],
                }
            ],
            "metadata": {"items": [{"key": "startup-script", "value": spec.user_data}]},
            "scheduling": {
                "provisioningModel": "SPOT" if spec.pricing_model == "spot" else "STANDARD",
                "instanceTerminationAction": "DELETE",
                "maxRunDuration": {"seconds": str(spec.ttl_minutes * 60)},
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": False,
            },
        }
        if t.accelerator_type:
            body["guestAccelerators"] = [
                {
                    "acceleratorType": f"zones/{zone}/acceleratorTypes/{t.accelerator_type}",
                    "acceleratorCount": t.gpu_count,
                }
            ]
        if t.service_account:
            body["serviceAccounts"] = [
                {
                    "email": t.service_account,
                    "scopes": ["https://www.googleapis.com/auth/devstorage.read_write"],
                }
            ]
        return body

    def launch(self, spec: LaunchSpec) -> list[str]:
        alive = self.find()
        mine = [i.instance_id for i in alive if i.bench_run_id == spec.bench_run_id]
        if mine:
            return mine
        if len(alive) >= self.max_running:
            raise CapReached(f"{len(alive)} GCP benchmark instances alive (cap {self.max_running})")
        request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"finops-bench/{spec.bench_run_id}"))
        try:
            self.api.call(
                "POST",
                f"{self._project}/zones/{self.target.zone}/instances",
                params={"requestId": request_id},
                json=self.body(spec),
            )  # requestId: retry-safe
            return [f"{self.target.zone}/{NAME_PREFIX}{spec.bench_run_id}"]
        except Exception as e:
            raise launch_failed(self, spec, e, "GCP insert") from e

    def find(self, bench_run_id: str | None = None) -> list[Instance]:
        filt = f"labels.{L_BENCH}=true"
        if bench_run_id:
            filt += f" AND labels.{L_RUN}={bench_run_id}"
        out: list[Instance] = []
        token = None
        while True:
            params = {"filter": filt, "maxResults": 500}
            if token:
                params["pageToken"] = token
            page = self.api.call("GET", f"{self._project}/aggregated/instances", params=params)
            for scope, items in (page.get("items") or {}).items():
                for i in items.get("instances", []):
                    labels = i.get("labels", {})
                    zone = scope.split("/", 1)[-1]
                    exp = labels.get(L_EXPIRES)
                    out.append(
                        Instance(
                            "gcp",
                            zone,
                            f"{zone}/{i['name']}",
                            i.get("status", ""),
                            labels.get(L_RUN),
                            datetime.fromtimestamp(int(exp), UTC) if exp and exp.isdigit() else None,
                            labels,
                        )
                    )
            token = page.get("nextPageToken")
            if not token:
                return out

    def terminate(self, instance_ids: list[str]) -> None:
        for iid in instance_ids:
            zone, name = iid.split("/", 1)
            try:
                self.api.call("DELETE", f"{self._project}/zones/{zone}/instances/{name}")
            except ApiError as e:
                if e.status != 404:  # already gone is what we want
                    raise
