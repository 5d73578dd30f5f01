"""The `lambda` job provider: one Lambda Cloud instance per attempt, behind the executor's
Provider interface, through the benchmark launcher's REST client and connection.

Lambda Cloud sells on-demand only: a spot candidate raises CapacityError at once, so the
planner moves on (candidates for Lambda should be on-demand). There is no preemption to
notice; an instance gone without an exit code (terminated by anyone else, or failed) is `gone`.

- start: `POST /api/v1/instance-operations/launch` (never retried blindly: a non-idempotent
  POST) named `finops-<job id>-a<attempt>`; a retried task finds that name alive and adopts it.
  `instance-operations/launch/insufficient-capacity` (HTTP 400) and `global/quota-exceeded`
  raise CapacityError. Any other failure looks for what the call may have created and
  terminates it before raising. Tags: the job's, cut to a safe alphabet, plus the checkpoint
  URI and launch token, read back by status.
- status: `GET /api/v1/instances/<id>`. An exit code in the checkpoint store -> `exited:<code>`
  and the instance is terminated (a powered-off Lambda instance still bills); booting / active
  / unhealthy / terminating -> `running`; terminated or 404 -> `gone`.
- terminate: `POST /api/v1/instance-operations/terminate` (404: already gone).
- find: instances whose tags carry `finops-job-id`, not terminated.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from finops.gpubench.launchers.lambda_cloud import DEFAULT_BASE
from finops.gpubench.launchers.rest import ApiError
from finops.jobs.aws import user_data
from finops.jobs.clouds import TAG_CKPT, TAG_TOKEN, JobApi, exit_code, instance_name, lambda_tags
from finops.jobs.executor import CapacityError
from finops.jobs.planner import Candidate
from finops.jobs.spec import JobSpec

log = logging.getLogger(__name__)
CAPACITY_CODES = frozenset({"instance-operations/launch/insufficient-capacity", "global/quota-exceeded"})
GONE = ("terminated",)


def _tags(inst: Mapping[str, Any]) -> dict[str, str]:
    return {str(t.get("key")): str(t.get("value")) for t in inst.get("tags") or [] if isinstance(t, dict)}


class LambdaJobProvider:
    name = "lambda"

    def __init__(
        self,
        ssh_key_name: str,
        *,
        conn_id: str | None = None,
        python: str = "python3",
        base_url: str | None = None,
        api: Any = None,
    ) -> None:
        self.ssh_key_name, self.conn_id, self.python, self.base_url = ssh_key_name, conn_id, python, base_url
        self._api = api

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> LambdaJobProvider:
        return cls(cfg["ssh_key_name"], conn_id=cfg.get("conn_id"), python=cfg.get("python", "python3"),
                   base_url=cfg.get("base_url"))  # fmt: skip

    def config(self) -> dict[str, Any]:
        return {"kind": "lambda", "ssh_key_name": self.ssh_key_name, "conn_id": self.conn_id,
                "python": self.python, "base_url": self.base_url}  # fmt: skip

    @property
    def api(self) -> Any:
        if self._api is None:
            from finops.connections import http_session

            base, key = self.base_url or DEFAULT_BASE, None
            if self.conn_id:  # the connection's host and API key, as the benchmark launcher reads them
                from finops.prices.conn import resolve

                ep = resolve(self.conn_id, DEFAULT_BASE, keep_path=False)
                base, key = self.base_url or ep.base_url, ep.api_key
            self._api = JobApi(base, key, session=http_session(self.conn_id))
        return self._api

    def _by_name(self, name: str) -> list[str]:
        data = self.api.call("GET", "/api/v1/instances")["data"]
        return [str(i["id"]) for i in data if i.get("name") == name and i.get("status") not in GONE]

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        if candidate.pricing_model == "spot":
            raise CapacityError("Lambda Cloud has no spot instances: on-demand only")
        name = instance_name(tags, spec.name, attempt)
        mine = self._by_name(name)
        if mine:
            log.info("Lambda instance %s (%s) exists already: adopting it", mine[0], name)  # a retried task
            return mine[0]
        token = uuid.uuid4().hex
        job_tags = {**tags, TAG_TOKEN: token}
        body: dict[str, Any] = {
            "region_name": candidate.region,
            "instance_type_name": candidate.instance_type,
            "ssh_key_names": [self.ssh_key_name],
            "quantity": 1,
            "name": name,
            "user_data": user_data(spec, attempt, precision, token, self.python, provider="lambda"),
            "tags": [*lambda_tags(job_tags), {"key": TAG_CKPT, "value": spec.checkpoint_uri[:255]}],
        }
        try:
            resp = self.api.call("POST", "/api/v1/instance-operations/launch", json=body, idempotent=False)
        except ApiError as e:
            code = self.api.last_error_code or ""
            if code in CAPACITY_CODES:
                raise CapacityError(f"{code}: {e}"[:500]) from e
            self._cleanup(name)
            raise
        return str(resp["data"]["instance_ids"][0])

    def _cleanup(self, name: str) -> None:
        """A failed launch may still have created the instance (a 5xx, a lost reply)."""
        try:
            left = self._by_name(name)
            if left:
                log.warning("Lambda launch of %s failed after creating %s: terminating", name, left)
                self.api.call("POST", "/api/v1/instance-operations/terminate", json={"instance_ids": left})
        except Exception as ce:  # noqa: BLE001 - the launch error is the one to report; the reaper retries
            log.error("cleanup after the failed Lambda launch of %s failed: %s", name, ce)

    def _get(self, instance_id: str) -> dict[str, Any] | None:
        try:
            inst: dict[str, Any] = self.api.call("GET", f"/api/v1/instances/{instance_id}")["data"]
            return inst
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def status(self, instance_id: str) -> str:
        inst = self._get(instance_id)
        if inst is None:
            return "gone"
        tags = _tags(inst)
        code = exit_code(tags.get(TAG_CKPT), tags.get(TAG_TOKEN))
        if code is not None:
            if inst.get("status") not in GONE:
                self.terminate(instance_id)  # powered off, a Lambda instance still bills
            return f"exited:{code}"
        return "gone" if inst.get("status") in GONE else "running"

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """Lambda has no graceful stop through the API: the job saves on its own cadence."""
        try:
            self.api.call(
                "POST", "/api/v1/instance-operations/terminate", json={"instance_ids": [instance_id]}
            )
        except ApiError as e:
            if e.status != 404:
                raise
        return "gone"

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        out = []
        for inst in self.api.call("GET", "/api/v1/instances")["data"]:
            tags = _tags(inst)
            if inst.get("status") in GONE or "finops-job-id" not in tags:
                continue
            if job_id is None or tags["finops-job-id"] == job_id:
                out.append((str(inst["id"]), tags))
        return out
