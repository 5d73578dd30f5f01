"""GCP actions: labels via instances.setLabels (with the labelFingerprint, so a concurrent
change makes the call fail instead of overwriting it) and instances.stop. Both are sent as
non-idempotent calls: retried on 429 only, never after a 5xx or a lost answer, where the
server may already have acted (the failure is audited; the next run re-decides)."""

from __future__ import annotations

from finops.policies.decide import Resource
from finops.policies.inventory.gcp import GcpInventory
from finops.policies.model import spellings


class GcpActions:
    provider = "gcp"
    supports_tags = True

    def __init__(self, inventory: GcpInventory):
        self.inv = inventory

    def _base(self, r: Resource) -> str:
        inst = self.inv.raw(r.resource_id)
        return f"compute/v1/projects/{self.inv.project}/zones/{r.region}/instances/{inst['name']}"

    def _set_labels(self, r: Resource, labels: dict[str, str]) -> None:
        inst = self.inv.raw(r.resource_id)
        self.inv.compute.post(
            f"{self._base(r)}/setLabels",
            json={"labels": labels, "labelFingerprint": inst.get("labelFingerprint", "")},
            idempotent=False,
        )

    def mark(self, resource: Resource, key: str, value: str, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would mark"
        labels = dict(self.inv.raw(resource.resource_id).get("labels", {}) or {})
        self._set_labels(resource, {**labels, key: value})
        return "marked"

    def unmark(self, resource: Resource, key: str, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would unmark"
        labels = dict(self.inv.raw(resource.resource_id).get("labels", {}) or {})
        for k in spellings(labels, key):
            labels.pop(k, None)
        self._set_labels(resource, labels)
        return "unmarked"

    def stop(self, resource: Resource, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would stop"
        op = self.inv.compute.post(f"{self._base(resource)}/stop", idempotent=False)
        return f"stopped: operation {op.get('name', '?')} {op.get('status', '')}".strip()
