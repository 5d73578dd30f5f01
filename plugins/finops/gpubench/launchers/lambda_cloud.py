"""Lambda Cloud launcher: `POST /api/v1/instance-operations/launch` (with cloud-init user
data), `POST /api/v1/instance-operations/terminate`, `GET /api/v1/instances`.

Lambda has no shutdown-terminates behaviour and no required tags, so a benchmark instance is
recognised by its name, which also carries its expiry: `finops-bench-<run id>-<YYYYmmddTHHMMZ>`
(tags are sent too). A powered-off Lambda instance still bills: teardown and the reaper matter.
Results go to S3 through a pre-signed PUT URL in the user data.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

from finops.gpubench.launchers.base import (
    NAME_PREFIX,
    CapReached,
    Instance,
    LaunchSpec,
    adoptable,
    launch_failed,
)
from finops.gpubench.launchers.rest import RestClient
from finops.gpubench.settings import Target

log = logging.getLogger(__name__)
DEFAULT_BASE = "https://cloud.lambda.ai"
_NAME = re.compile(rf"^{NAME_PREFIX}(?P<bid>[0-9a-f]{{8,40}})-(?P<exp>\d{{8}}T\d{{4}}Z)$")
GONE = {"terminated"}


def instance_name(spec: LaunchSpec) -> str:
    return f"{NAME_PREFIX}{spec.bench_run_id}-{spec.expires_at.astimezone(UTC):%Y%m%dT%H%MZ}"


def parse_name(name: str | None) -> tuple[str, datetime] | None:
    m = _NAME.match(name or "")
    if not m:
        return None
    return m["bid"], datetime.strptime(m["exp"], "%Y%m%dT%H%MZ").replace(tzinfo=UTC)


class LambdaLauncher:
    provider = "lambda"

    def __init__(self, api: RestClient, target: Target, max_running: int = 8):
        self.api = api
        self.target = target
        self.max_running = max_running

    @classmethod
    def from_conn(cls, conn_id: str, target: Target, max_running: int = 8) -> LambdaLauncher:
        from finops.connections import http_session
        from finops.prices.conn import resolve

        ep = resolve(conn_id, DEFAULT_BASE, keep_path=False)
        return cls(RestClient(ep.base_url, ep.api_key, session=http_session(conn_id)), target, max_running)

    def launch(self, spec: LaunchSpec) -> list[str]:
        alive = self.find()
        # a retried task: this run's instance is already there -- unless it is the one a failed
        # attempt's cleanup is terminating (listed `terminating` for a while): then launch anew
        mine = adoptable(alive, spec.bench_run_id)
        if mine:
            return mine
        if len(alive) >= self.max_running:
            raise CapReached(f"{len(alive)} Lambda benchmark instances alive (cap {self.max_running})")
        body: dict[str, Any] = {
            "region_name": spec.region,
            "instance_type_name": spec.instance_type,
            "ssh_key_names": [self.target.ssh_key_name],
            "quantity": 1,
            "name": instance_name(spec),
            "user_data": spec.user_data,
            "tags": [{"key": k.replace(":", "-"), "value": v} for k, v in spec.tags().items() if k != "Name"],
        }
        try:
            resp = self.api.call("POST", "/api/v1/instance-operations/launch", json=body, idempotent=False)
            return list(resp["data"]["instance_ids"])
        except Exception as e:
            raise launch_failed(self, spec, e, "Lambda launch") from e

    def find(self, bench_run_id: str | None = None) -> list[Instance]:
        data = self.api.call("GET", "/api/v1/instances")["data"]
        out = []
        for i in data:
            parsed = parse_name(i.get("name"))
            if not parsed or i.get("status") in GONE:
                continue
            bid, exp = parsed
            if bench_run_id and bid != bench_run_id:
                continue
            region = (i.get("region") or {}).get("name", "")
            out.append(Instance("lambda", region, i["id"], i.get("status", ""), bid, exp))
        return out

    def terminate(self, instance_ids: list[str]) -> None:
        if instance_ids:
            # terminating twice is harmless, so retrying on 5xx is safe
            self.api.call(
                "POST", "/api/v1/instance-operations/terminate", json={"instance_ids": list(instance_ids)}
            )
