"""Azure actions: tags via the Tags resource (`Merge` / `Delete` patch, other tags kept) and
VM deallocate (stop alone keeps billing the compute). Both are sent as non-idempotent calls:
retried on 429 only, never after a 5xx or a lost answer, where ARM may already have acted."""

from __future__ import annotations

from finops.policies.decide import Resource
from finops.policies.inventory.azure import COMPUTE_API, AzureInventory
from finops.policies.model import spellings

TAGS_API = "2021-04-01"


class AzureActions:
    provider = "azure"
    supports_tags = True

    def __init__(self, inventory: AzureInventory):
        self.arm = inventory.arm

    def _tags(self, r: Resource, operation: str, tags: dict[str, str]) -> None:
        self.arm.request(
            "PATCH",
            f"{r.resource_id}/providers/Microsoft.Resources/tags/default",
            params={"api-version": TAGS_API},
            json={"operation": operation, "properties": {"tags": tags}},
            idempotent=False,
        )

    def mark(self, resource: Resource, key: str, value: str, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would mark"
        self._tags(resource, "Merge", {key: value})
        return "marked"

    def unmark(self, resource: Resource, key: str, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would unmark"
        self._tags(resource, "Delete", {k: resource.tags.get(k, "") for k in spellings(resource.tags, key)})
        return "unmarked"

    def stop(self, resource: Resource, dry_run: bool) -> str:
        if dry_run:
            return "dry_run: would deallocate"
        self.arm.post(
            f"{resource.resource_id}/deallocate", params={"api-version": COMPUTE_API}, idempotent=False
        )
        return "deallocated: requested"
