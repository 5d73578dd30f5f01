"""The `gcp` job provider: one Compute Engine VM per attempt (Spot or standard), behind the
executor's Provider interface, built on the benchmark launcher's instance body
(finops.gpubench.launchers.gcp) and its REST client.

- start: `instances.insert` named `finops-<job id>-a<attempt>` (a retried insert answers 409
  and the VM is adopted), `requestId` stable per launch. Spot: `scheduling.provisioningModel=SPOT`
  with `instanceTerminationAction=DELETE`, so a preempted VM leaves no disk behind. Every VM
  carries `maxRunDuration` (`max_run_hours`, default 72) as the cloud's own cap. Labels: the
  job's tags cut to GCP's label alphabet; the checkpoint URI and launch token ride in metadata.
  The insert's operation is waited on (`operations.wait`): `ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS]`,
  `QUOTA_EXCEEDED` and the like raise CapacityError, so the planner moves to the next candidate.
- status: PROVISIONING / STAGING / RUNNING -> `running` (unless the job's exit code is stored);
  an exit code in the checkpoint store -> `exited:<code>`; TERMINATED / STOPPED / SUSPENDED or
  404 with no exit code -> `gone`. A Spot VM found stopped is checked for its
  `compute.instances.preempted` operation (logged). A VM found ended is deleted: a stopped VM
  still bills its disks.
- terminate: `instances.delete` (the guest gets its shutdown, so the job saves); 404 is fine.
- find: the project's VMs labelled `finops-job-id` (aggregated list, every page).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.gpubench.launchers.base import LaunchSpec
from finops.gpubench.launchers.gcp import DEFAULT_BASE, GcpLauncher
from finops.gpubench.launchers.rest import ApiError
from finops.gpubench.settings import Target
from finops.jobs.aws import user_data
from finops.jobs.clouds import TAG_CKPT, TAG_TOKEN, JobApi, exit_code, gcp_labels, instance_name
from finops.jobs.executor import CapacityError
from finops.jobs.planner import Candidate
from finops.jobs.spec import JobSpec

log = logging.getLogger(__name__)
CAPACITY_CODES = frozenset({
    "ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "RESOURCE_POOL_EXHAUSTED",
    "QUOTA_EXCEEDED", "resourcePoolExhausted", "quotaExceeded", "UNSUPPORTED_OPERATION",
})  # fmt: skip
LIVE = ("PROVISIONING", "STAGING", "RUNNING", "REPAIRING")
ENDING = ("STOPPING", "SUSPENDING")
PREEMPTED_OP = "compute.instances.preempted"


class GcpJobProvider:
    name = "gcp"

    def __init__(
        self,
        project: str,
        image: str,
        *,
        zones: Mapping[str, str] | None = None,
        conn_id: str | None = None,
        service_account: str | None = None,
        accelerator_type: str | None = None,
        gpu_count: int = 1,
        root_volume_gib: int = 200,
        max_run_hours: float = 72.0,
        python: str = "python3",
        base_url: str = DEFAULT_BASE,
        api: Any = None,
    ) -> None:
        self.project, self.image, self.zones, self.conn_id = project, image, dict(zones or {}), conn_id
        self.service_account, self.accelerator_type, self.gpu_count = (
            service_account,
            accelerator_type,
            gpu_count,
        )
        self.root_volume_gib, self.max_run_hours, self.python = root_volume_gib, max_run_hours, python
        self.base_url = base_url
        self._api = api

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> GcpJobProvider:
        return cls(
            cfg["project"], cfg["image"], zones=cfg.get("zones"), conn_id=cfg.get("conn_id"),
            service_account=cfg.get("service_account"), accelerator_type=cfg.get("accelerator_type"),
            gpu_count=int(cfg.get("gpu_count", 1)), root_volume_gib=int(cfg.get("root_volume_gib", 200)),
            max_run_hours=float(cfg.get("max_run_hours", 72.0)), python=cfg.get("python", "python3"),
            base_url=cfg.get("base_url") or DEFAULT_BASE,
        )  # fmt: skip

    def config(self) -> dict[str, Any]:
        return {"kind": "gcp", "project": self.project, "image": self.image, "zones": self.zones,
                "conn_id": self.conn_id, "service_account": self.service_account,
                "accelerator_type": self.accelerator_type, "gpu_count": self.gpu_count,
                "root_volume_gib": self.root_volume_gib, "max_run_hours": self.max_run_hours,
                "python": self.python, "base_url": self.base_url}  # fmt: skip

    @property
    def api(self) -> Any:
        if self._api is None:
            from finops import connections

            token = connections.gcp_token(self.conn_id) if self.conn_id else None
            self._api = JobApi(self.base_url, token, session=connections.http_session(self.conn_id))
        return self._api

    @property
    def _project(self) -> str:
        return f"/projects/{self.project}"

    def zone_for(self, region: str) -> str | None:
        """The zone a candidate's region launches in (`zones` maps region -> zone)."""
        return self.zones.get(region)

    def body(
        self,
        spec: JobSpec,
        attempt: int,
        precision: str,
        candidate: Candidate,
        tags: dict[str, str],
        name: str,
        zone: str,
        token: str,
    ) -> dict[str, Any]:
        """The launcher's instance body, with the job's name, labels, metadata and scheduling."""
        target = Target(
            provider="gcp", region=candidate.region, instance_type=candidate.instance_type,
            pricing_model="spot" if candidate.pricing_model == "spot" else "ondemand", project=self.project,
            zone=zone, image=self.image, service_account=self.service_account,
            accelerator_type=self.accelerator_type, gpu_count=self.gpu_count, root_volume_gib=self.root_volume_gib,
        )  # fmt: skip
        ttl = max(int(self.max_run_hours * 60), 1)
        script = user_data(spec, attempt, precision, token, self.python, provider="gcp")
        launch = LaunchSpec(name, tags.get("finops-dag-id", ""), tags.get("finops-run-id", ""), candidate.region,
                            candidate.instance_type, target.pricing_model, script,
                            datetime.now(UTC) + timedelta(minutes=ttl), ttl)  # fmt: skip
        body = GcpLauncher(self.api, target).body(launch)
        labels = gcp_labels({**tags, TAG_TOKEN: token})
        body["name"] = name
        body["labels"] = labels
        body["disks"][0]["initializeParams"]["labels"] = labels
        body["metadata"]["items"] += [{"key": TAG_CKPT, "value": spec.checkpoint_uri},
                                      {"key": TAG_TOKEN, "value": token}]  # fmt: skip
        return body

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        zone = self.zone_for(candidate.region)
        if zone is None:
            raise CapacityError(f"no zone configured for GCP region {candidate.region!r} (provider `zones`)")
        name = instance_name(tags, spec.name, attempt)
        iid = f"{zone}/{name}"
        token = uuid.uuid4().hex
        body = self.body(spec, attempt, precision, candidate, tags, name, zone, token)
        request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"finops-job/{self.project}/{iid}/{token}"))
        try:
            op = self.api.call("POST", f"{self._project}/zones/{zone}/instances", params={"requestId": request_id},
                               json=body)  # fmt: skip
        except ApiError as e:
            code = self.api.last_error_code or ""
            if e.status == 409:  # a retried task: this attempt's VM exists already
                log.info("GCP VM %s exists already: adopting it", iid)
                return iid
            if code in CAPACITY_CODES:
                raise CapacityError(f"{code}: {e}"[:500]) from e
            self._cleanup(iid)
            raise
        try:
            done = self.api.call("POST", f"{self._project}/zones/{zone}/operations/{op['name']}/wait")
        except Exception:
            self._cleanup(iid)  # we cannot tell whether it came up: never leave it behind
            raise
        errors = ((done or {}).get("error") or {}).get("errors") or []
        if errors:
            self._cleanup(iid)
            codes = [str(e.get("code", "")) for e in errors]
            msg = "; ".join(f"{e.get('code')}: {e.get('message', '')}" for e in errors)[:500]
            if any(c in CAPACITY_CODES for c in codes):
                raise CapacityError(msg)
            raise RuntimeError(f"GCP insert of {iid} failed: {msg}")
        return iid

    def _cleanup(self, iid: str) -> None:
        try:
            self.terminate(iid)
        except Exception as ce:  # noqa: BLE001 - the launch error is the one to report; the reaper retries
            log.error("cleanup of GCP VM %s after a failed insert failed: %s", iid, ce)

    def _get(self, iid: str) -> dict[str, Any] | None:
        zone, name = iid.split("/", 1)
        try:
            vm: dict[str, Any] = self.api.call("GET", f"{self._project}/zones/{zone}/instances/{name}")
            return vm
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def _preempted(self, iid: str) -> str | None:
        """The preemption operation of a VM, if Compute Engine recorded one."""
        zone, name = iid.split("/", 1)
        page = self.api.call("GET", f"{self._project}/zones/{zone}/operations",
                             params={"filter": f'operationType="{PREEMPTED_OP}"'})  # fmt: skip
        for op in page.get("items") or []:
            if str(op.get("targetLink", "")).endswith(f"/instances/{name}"):
                return str(op.get("name"))
        return None

    def status(self, instance_id: str) -> str:
        vm = self._get(instance_id)
        if vm is None:
            return "gone"  # deleted: a preempted Spot VM (terminationAction DELETE) or by anyone else
        meta = {i.get("key"): i.get("value") for i in (vm.get("metadata") or {}).get("items") or []}
        code = exit_code(meta.get(TAG_CKPT), meta.get(TAG_TOKEN))
        state = str(vm.get("status", ""))
        if code is None and state in LIVE + ENDING:
            return "running"  # an ending VM's exit code may be on its way
        if code is None and (vm.get("scheduling") or {}).get("provisioningModel") == "SPOT":
            try:
                op = self._preempted(instance_id)
            except ApiError as e:  # only the log line depends on it
                op = None
                log.warning("looking up the preemption of %s failed: %s", instance_id, e)
            if op:
                log.warning("GCP Spot VM %s was preempted (operation %s)", instance_id, op)
        self.terminate(instance_id)  # ended, or its job did: a stopped VM still bills its disks
        return "gone" if code is None else f"exited:{code}"

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """`instances.delete`: the guest OS is shut down first, so the job gets SIGTERM."""
        zone, name = instance_id.split("/", 1)
        try:
            self.api.call("DELETE", f"{self._project}/zones/{zone}/instances/{name}")
        except ApiError as e:
            if e.status != 404:
                raise
        return "gone"

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        filt = (
            f"labels.finops-job-id={gcp_labels({'k': job_id})['k']}" if job_id else "labels.finops-job-id:*"
        )
        out: list[tuple[str, dict[str, str]]] = []
        token = None
        while True:
            params: dict[str, Any] = {"filter": filt, "maxResults": 500}
            if token:
                params["pageToken"] = token
            page = self.api.call("GET", f"{self._project}/aggregated/instances", params=params)
            for scope, items in (page.get("items") or {}).items():
                zone = scope.split("/", 1)[-1]
                for vm in items.get("instances", []):
                    out.append((f"{zone}/{vm['name']}", dict(vm.get("labels") or {})))
            token = page.get("nextPageToken")
            if not token:
                return out
