"""The `azure` job provider: one VM per attempt (Spot or regular priority), behind the
executor's Provider interface, built on the benchmark launcher's VM body
(finops.gpubench.launchers.azure: NIC and OS disk deleted with the VM) and its REST client.

- start: ARM `virtualMachines` PUT named `finops-<job id>-a<attempt>` (PUT is idempotent by
  name: a retried task gets the same VM). Spot: `priority: Spot`, `evictionPolicy: Delete`,
  `billingProfile.maxPrice: -1` (pay up to on-demand, evicted for capacity only). Tags: the
  job's, cut to Azure's tag rules, plus the checkpoint URI and launch token. Capacity answers
  (`SkuNotAvailable`, `AllocationFailed`, `ZonalAllocationFailed`, `Overconstrained...`, a
  quota refusal) raise CapacityError, whether the PUT says so or the VM's provisioning fails
  within `create_wait_s`; a VM that failed is deleted first.
- status: GET with the instance view. The job's exit code in the checkpoint store ->
  `exited:<code>`; provisioning Creating / Updating / Succeeded with PowerState starting or
  running -> `running`; a VM deleted (a Spot eviction with evictionPolicy Delete), deallocated
  (an eviction with Deallocate), stopped or failed, with no exit code -> `gone`. An ended VM
  is deleted: stopped but allocated, an Azure VM still bills.
- terminate: DELETE with forceDeletion (404 is fine).
- find: the resource group's VMs tagged `finops-job-id` (every page).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.gpubench.launchers.azure import API_VERSION, DEFAULT_BASE, AzureLauncher
from finops.gpubench.launchers.base import LaunchSpec
from finops.gpubench.launchers.rest import ApiError
from finops.gpubench.settings import Target
from finops.jobs.aws import user_data
from finops.jobs.clouds import TAG_CKPT, TAG_TOKEN, JobApi, azure_tags, exit_code, instance_name
from finops.jobs.executor import CapacityError
from finops.jobs.planner import Candidate
from finops.jobs.spec import JobSpec

log = logging.getLogger(__name__)
CAPACITY_CODES = frozenset({
    "SkuNotAvailable", "AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
    "OverconstrainedZonalAllocationRequest", "SpotAllocationFailed", "QuotaExceeded",
})  # fmt: skip
LIVE_POWER = ("PowerState/starting", "PowerState/running")


def _codes(vm: Mapping[str, Any]) -> list[str]:
    view = (vm.get("properties") or {}).get("instanceView") or {}
    return [str(s.get("code", "")) for s in view.get("statuses") or []]


def _capacity(code: str) -> bool:
    return code.rsplit("/", 1)[-1] in CAPACITY_CODES


class AzureJobProvider:
    name = "azure"

    def __init__(
        self,
        subscription_id: str,
        resource_group: str,
        subnet_id: str,
        ssh_public_key: str,
        image_reference: Mapping[str, str],
        *,
        conn_id: str | None = None,
        identity_id: str | None = None,
        root_volume_gib: int = 200,
        create_wait_s: float = 120.0,
        poll_s: float = 5.0,
        python: str = "python3",
        base_url: str = DEFAULT_BASE,
        api: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.subscription_id, self.resource_group, self.subnet_id = subscription_id, resource_group, subnet_id
        self.ssh_public_key, self.image_reference = ssh_public_key, dict(image_reference)
        self.conn_id, self.identity_id, self.root_volume_gib = conn_id, identity_id, root_volume_gib
        self.create_wait_s, self.poll_s, self.python, self.base_url = create_wait_s, poll_s, python, base_url
        self._api, self._sleep = api, sleep

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> AzureJobProvider:
        return cls(
            cfg["subscription_id"], cfg["resource_group"], cfg["subnet_id"], cfg["ssh_public_key"],
            cfg.get("image_reference") or {}, conn_id=cfg.get("conn_id"), identity_id=cfg.get("identity_id"),
            root_volume_gib=int(cfg.get("root_volume_gib", 200)), create_wait_s=float(cfg.get("create_wait_s", 120)),
            poll_s=float(cfg.get("poll_s", 5)), python=cfg.get("python", "python3"),
            base_url=cfg.get("base_url") or DEFAULT_BASE,
        )  # fmt: skip

    def config(self) -> dict[str, Any]:
        return {"kind": "azure", "subscription_id": self.subscription_id, "resource_group": self.resource_group,
                "subnet_id": self.subnet_id, "ssh_public_key": self.ssh_public_key,
                "image_reference": self.image_reference, "conn_id": self.conn_id, "identity_id": self.identity_id,
                "root_volume_gib": self.root_volume_gib, "create_wait_s": self.create_wait_s,
                "poll_s": self.poll_s, "python": self.python, "base_url": self.base_url}  # fmt: skip

    @property
    def api(self) -> Any:
        if self._api is None:
            from finops import connections

            token = connections.azure_token(self.conn_id) if self.conn_id else None
            self._api = JobApi(self.base_url, token, session=connections.http_session(self.conn_id))
        return self._api

    @property
    def _vms(self) -> str:
        return (f"/subscriptions/{self.subscription_id}/resourceGroups/{self.resource_group}"
                "/providers/Microsoft.Compute/virtualMachines")  # fmt: skip

    def body(
        self,
        spec: JobSpec,
        attempt: int,
        precision: str,
        candidate: Candidate,
        tags: dict[str, str],
        name: str,
        token: str,
    ) -> dict[str, Any]:
        """The launcher's VM body, with the job's name and tags."""
        target = Target(
            provider="azure", region=candidate.region, instance_type=candidate.instance_type,
            pricing_model="spot" if candidate.pricing_model == "spot" else "ondemand",
            subscription_id=self.subscription_id, resource_group=self.resource_group, subnet_id=self.subnet_id,
            ssh_public_key=self.ssh_public_key, image_reference=self.image_reference, identity_id=self.identity_id,
            root_volume_gib=self.root_volume_gib,
        )  # fmt: skip
        script = user_data(spec, attempt, precision, token, self.python, provider="azure")
        launch = LaunchSpec(name, tags.get("finops-dag-id", ""), tags.get("finops-run-id", ""), candidate.region,
                            candidate.instance_type, target.pricing_model, script,
                            datetime.now(UTC) + timedelta(days=1), 60)  # fmt: skip
        body = AzureLauncher(self.api, target).body(launch)
        job_tags = {**tags, TAG_TOKEN: token}
        if len(spec.checkpoint_uri) <= 256:
            job_tags[TAG_CKPT] = spec.checkpoint_uri
        body["tags"] = azure_tags(job_tags)
        props = body["properties"]
        props["osProfile"]["computerName"] = name[:64]
        props["networkProfile"]["networkInterfaceConfigurations"][0]["name"] = f"{name}-nic"
        return body

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        name = instance_name(tags, spec.name, attempt, limit=64)
        existing = self._get(name)
        if existing is not None and _state(existing) not in ("Deleting", "Failed"):
            log.info("Azure VM %s exists already: adopting it", name)  # a retried task
            return name
        token = uuid.uuid4().hex
        body = self.body(spec, attempt, precision, candidate, tags, name, token)
        try:
            vm = self.api.call("PUT", f"{self._vms}/{name}", params={"api-version": API_VERSION}, json=body)
        except ApiError as e:
            code = self.api.last_error_code or ""
            self._cleanup(name)
            if _capacity(code):
                raise CapacityError(f"{code}: {e}"[:500]) from e
            raise
        deadline = time.monotonic() + self.create_wait_s
        while _state(vm) in ("Creating", "Updating", "") and time.monotonic() < deadline:
            self._sleep(self.poll_s)
            vm = self._get(name) or {"properties": {"provisioningState": "Failed"}}
        if _state(vm) == "Failed":
            codes = _codes(vm)
            self._cleanup(name)
            why = (
                ", ".join(c for c in codes if c.startswith("ProvisioningState/failed"))
                or "provisioning failed"
            )
            if any(_capacity(c) for c in codes):
                raise CapacityError(f"Azure VM {name}: {why}")
            raise RuntimeError(f"Azure VM {name}: {why}")
        return name

    def _cleanup(self, name: str) -> None:
        try:
            self.terminate(name)
        except Exception as ce:  # noqa: BLE001 - the launch error is the one to report; the reaper retries
            log.error("cleanup of Azure VM %s after a failed create failed: %s", name, ce)

    def _get(self, name: str) -> dict[str, Any] | None:
        try:
            vm: dict[str, Any] = self.api.call(
                "GET", f"{self._vms}/{name}", params={"api-version": API_VERSION, "$expand": "instanceView"}
            )
            return vm
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def status(self, instance_id: str) -> str:
        vm = self._get(instance_id)
        if vm is None:
            return "gone"  # deleted: a Spot eviction (evictionPolicy Delete) or by anyone else
        tags = vm.get("tags") or {}
        code = exit_code(tags.get(TAG_CKPT), tags.get(TAG_TOKEN))
        state, power = _state(vm), [c for c in _codes(vm) if c.startswith("PowerState/")]
        if code is None:
            if state in ("Creating", "Updating", "Deleting"):
                return "running"  # not up yet, or ending: an exit code may be on its way
            if power and power[0] in (*LIVE_POWER, "PowerState/stopping"):
                return "running"  # a failed extension or update leaves a running VM `Failed`
            if state == "Succeeded" and not power:
                return "running"
            log.warning("Azure VM %s ended without an exit code (%s, %s): evicted or stopped", instance_id,
                        state, power[0] if power else "no power state")  # fmt: skip
        self.terminate(instance_id)  # stopped but allocated still bills
        return "gone" if code is None else f"exited:{code}"

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """DELETE: Azure shuts the guest down first, so the job gets SIGTERM."""
        try:
            self.api.call("DELETE", f"{self._vms}/{instance_id}",
                          params={"api-version": API_VERSION, "forceDeletion": "true"})  # fmt: skip
        except ApiError as e:
            if e.status != 404:
                raise
        return "gone"

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        out: list[tuple[str, dict[str, str]]] = []
        url: str | None = self._vms
        params: dict[str, Any] | None = {"api-version": API_VERSION}
        while url:
            page = self.api.call("GET", url, params=params)
            for vm in page.get("value", []):
                tags = dict(vm.get("tags") or {})
                if "finops-job-id" in tags and (job_id is None or tags["finops-job-id"] == job_id):
                    out.append((str(vm["name"]), tags))
            url, params = page.get("nextLink"), None  # nextLink carries its own query
        return out


def _state(vm: Mapping[str, Any] | None) -> str:
    return str(((vm or {}).get("properties") or {}).get("provisioningState", ""))
