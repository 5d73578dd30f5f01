"""Azure VM launcher (ARM REST `virtualMachines` PUT with customData; results to Blob with the
VM's managed identity).

PUT is idempotent by name, so retries are safe. The NIC is created with the VM
(networkInterfaceConfigurations, deleteOption=Delete) and OS disk deleteOption=Delete, so
deleting the VM leaves nothing behind. An OS power-off leaves an Azure VM *stopped but
allocated* (still billed): teardown and the hourly reaper delete it.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from finops.gpubench.launchers.base import (
    NAME_PREFIX,
    TAG_BENCH,
    TAG_EXPIRES,
    TAG_RUN,
    CapReached,
    Instance,
    LaunchSpec,
    adoptable,
    launch_failed,
    parse_iso,
)
from finops.gpubench.launchers.rest import ApiError, RestClient
from finops.gpubench.settings import Target

log = logging.getLogger(__name__)
DEFAULT_BASE = "https://management.azure.com"
API_VERSION = "2024-07-01"


class AzureLauncher:
    provider = "azure"

    def __init__(self, api: RestClient, target: Target, max_running: int = 8):
        self.api = api
        self.target = target
        self.max_running = max_running

    @classmethod
    def from_conn(cls, conn_id: str, target: Target, max_running: int = 8) -> AzureLauncher:
        from finops import connections

        # service principal, managed or workload identity: AzureBaseHook.get_credential()
        token = connections.azure_token(conn_id)
        return cls(
            RestClient(DEFAULT_BASE, token, session=connections.http_session(conn_id)), target, max_running
        )

    @property
    def _vms(self) -> str:
        t = self.target
        return (
            f"/subscriptions/{t.subscription_id}/resourceGroups/{t.resource_group}"
            "/providers/Microsoft.Compute/virtualMachines"
        )

    def body(self, spec: LaunchSpec) -> dict[str, Any]:
        t = self.target
        name = NAME_PREFIX + spec.bench_run_id
        props: dict[str, Any] = {
            "hardwareProfile": {"vmSize": spec.instance_type},
            "storageProfile": {
                "imageReference": dict(t.image_reference),
                "osDisk": {
                    "createOption": "FromImage",
                    "deleteOption": "Delete",
                    "diskSizeGB": t.root_volume_gib,
                },
            },
            "osProfile": {
                "computerName": name[:64],
                "adminUsername": "finops",
                "customData": base64.b64encode(spec.user_data.encode()).decode(),
                "linuxConfiguration": {
                    "disablePasswordAuthentication": True,
                    "ssh": {
                        "publicKeys": [
                            {"path": "/home/finops/.ssh/authorized_keys", "keyData": t.ssh_public_key or ""}
                        ]
                    },
                },
            },
            "networkProfile": {
                "networkApiVersion": "2020-11-01",
                "networkInterfaceConfigurations": [
                    {
                        "name": f"{name}-nic",
                        "properties": {
                            "primary": True,
                            "deleteOption": "Delete",
                            "ipConfigurations": [
                                {"name": "ipconfig1", "properties": {"subnet": {"id": t.subnet_id}}}
                            ],
                        },
                    }
                ],
            },
        }
        if spec.pricing_model == "spot":
            props |= {"priority": "Spot", "evictionPolicy": "Delete", "billingProfile": {"maxPrice": -1}}
        body: dict[str, Any] = {"location": spec.region, "tags": spec.tags(), "properties": props}
        if t.identity_id:
            body["identity"] = {"type": "UserAssigned", "userAssignedIdentities": {t.identity_id: {}}}
        return body

    def launch(self, spec: LaunchSpec) -> list[str]:
        alive = self.find()
        # a retried task: this run's VM is already there -- unless a failed attempt's cleanup is
        # deleting it (`Deleting` for minutes): then PUT again (ARM refuses until it is gone, and
        # the task retries)
        mine = adoptable(alive, spec.bench_run_id)
        if mine:
            return mine
        if len(alive) >= self.max_running:
            raise CapReached(f"{len(alive)} Azure benchmark VMs alive (cap {self.max_running})")
        name = NAME_PREFIX + spec.bench_run_id
        try:
            self.api.call(
                "PUT", f"{self._vms}/{name}", params={"api-version": API_VERSION}, json=self.body(spec)
            )
            return [name]
        except Exception as e:
            raise launch_failed(self, spec, e, "Azure VM create") from e

    def find(self, bench_run_id: str | None = None) -> list[Instance]:
        out: list[Instance] = []
        url: str | None = self._vms
        params: dict[str, Any] | None = {"api-version": API_VERSION}
        while url:
            page = self.api.call("GET", url, params=params)
            for vm in page.get("value", []):
                tags = vm.get("tags") or {}
                if tags.get(TAG_BENCH) != "true" or (bench_run_id and tags.get(TAG_RUN) != bench_run_id):
                    continue
                state = (vm.get("properties") or {}).get("provisioningState", "")
                if state == "Deleting":
                    state = "terminating"
                out.append(
                    Instance(
                        "azure",
                        vm.get("location", ""),
                        vm["name"],
                        state,
                        tags.get(TAG_RUN),
                        parse_iso(tags.get(TAG_EXPIRES)),
                        tags,
                    )
                )
            url, params = page.get("nextLink"), None  # nextLink carries its own query
        return out

    def terminate(self, instance_ids: list[str]) -> None:
        for name in instance_ids:
            try:
                self.api.call(
                    "DELETE",
                    f"{self._vms}/{name}",
                    params={"api-version": API_VERSION, "forceDeletion": "true"},
                )
            except ApiError as e:
                if e.status != 404:
                    raise
