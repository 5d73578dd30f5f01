"""Lambda Cloud actions: there is no stop, only terminate, which the policy model allows
only with `allow_terminate: true` on a Lambda-only policy. Marks are kept by the engine.
The terminate call is non-idempotent: retried on 429 only, never after a 5xx or a lost
answer (the server may have acted; the failure is audited and the next run re-decides)."""

from __future__ import annotations

from finops.policies.decide import Resource
from finops.policies.inventory.lambda_cloud import LambdaInventory


class LambdaActions:
    provider = "lambda"
    supports_tags = False

    def __init__(self, inventory: LambdaInventory, allow_terminate: bool = False):
        self.api = inventory.api
        self.allow_terminate = allow_terminate

    def mark(self, resource: Resource, key: str, value: str, dry_run: bool) -> str:
        raise NotImplementedError("Lambda Cloud marks are stored in policy_marks by the engine")

    def unmark(self, resource: Resource, key: str, dry_run: bool) -> str:
        raise NotImplementedError("Lambda Cloud marks are stored in policy_marks by the engine")

    def stop(self, resource: Resource, dry_run: bool) -> str:
        if not self.allow_terminate:
            return "refused: terminate not opted in"
        if dry_run:
            return "dry_run: would terminate"
        body = self.api.post(
            "api/v1/instance-operations/terminate",
            json={"instance_ids": [resource.resource_id]},
            idempotent=False,
        )
        gone = [i.get("id") for i in (body.get("data") or {}).get("terminated_instances", [])]
        return "terminated" if resource.resource_id in gone else f"terminate requested: {gone}"
