"""Lambda Cloud: `GET /api/v1/instances`. No metrics API and no creation time, so only tag /
name policies apply (idle policies always read `no_metrics`), and marks live in
`policy_marks` (the engine keeps them) rather than on the instance."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from finops.policies.decide import Resource, Series
from finops.policies.model import Policy
from finops.policies.rest import RestClient, TokenProvider

if TYPE_CHECKING:
    import requests

LAMBDA = "https://cloud.lambda.ai"
_STATE = {
    "active": "running",
    "booting": "pending",
    "unhealthy": "running",
    "terminating": "stopping",
    "terminated": "stopped",
}


def _tags(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    return {
        str(t.get("key")): str(t.get("value", "")) for t in raw or [] if isinstance(t, dict) and t.get("key")
    }


def to_resource(inst: dict[str, Any], account: str) -> Resource:
    itype = inst.get("instance_type") or {}
    specs = itype.get("specs") or {}
    return Resource(
        provider="lambda",
        account=account,
        region=(inst.get("region") or {}).get("name", ""),
        resource_id=inst["id"],
        name=inst.get("name") or "",
        state=_STATE.get(inst.get("status", ""), "other"),
        launched_at=None,
        tags=_tags(inst.get("tags")),
        instance_type=itype.get("name", ""),
        gpu_count=specs.get("gpus"),
    )


class LambdaInventory:
    provider = "lambda"

    def __init__(
        self,
        account: str = "lambda",
        token: TokenProvider | None = None,
        base_url: str = LAMBDA,
        session: requests.Session | None = None,
    ):
        self.account = account
        self.api = RestClient(base_url, token, session=session)

    @property
    def scope(self) -> tuple[str, str | None]:
        """What list_resources() covers in full (tag snapshots replace it as a whole)."""
        return self.account, None

    def list_resources(self) -> list[Resource]:
        data = self.api.get("api/v1/instances").get("data", []) or []
        return [to_resource(i, self.account) for i in data if i.get("status") != "terminated"]

    def refresh(self, resource: Resource) -> Resource | None:
        from finops.policies.rest import RestError

        try:
            inst = self.api.get(f"api/v1/instances/{resource.resource_id}").get("data")
        except RestError as e:
            if e.status == 404:
                return None
            raise
        return to_resource(inst, self.account) if inst else None

    def series(self, resource: Resource, policy: Policy, start: datetime, end: datetime) -> list[Series]:
        return []
