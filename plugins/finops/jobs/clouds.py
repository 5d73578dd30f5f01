"""What the REST job providers (`gcp`, `azure`, `lambda`) share: the launchers' RestClient
with the API's own error code kept, the job's exit code read from its checkpoint store, the
instance name, and tags cut to each cloud's alphabet.

Why the error code: capacity answers are told apart by code (GCP `ZONE_RESOURCE_POOL_EXHAUSTED`,
Azure `SkuNotAvailable` / `AllocationFailed`, Lambda `instance-operations/launch/insufficient-capacity`),
and finops.http_client keeps only the message in the exception.
"""

from __future__ import annotations

import re
from typing import Any

from finops.gpubench.launchers.rest import RestClient

TAG_TOKEN = "finops-launch"
TAG_CKPT = "finops-checkpoint"


class JobApi(RestClient):
    """RestClient whose last failed reply's error code is in `last_error_code` (one provider
    per thread: the trigger builds its own)."""

    def __init__(self, base_url: str, token: Any, **kw: Any) -> None:
        super().__init__(base_url, token, **kw)
        self.last_error_code: str | None = None
        self.session.hooks.setdefault("response", []).append(self._keep_code)

    def _keep_code(self, resp: Any, *args: Any, **kwargs: Any) -> Any:
        if resp.status_code >= 400:
            self.last_error_code = error_code(resp)
        return resp

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = True,
    ) -> Any:
        self.last_error_code = None
        return super().call(method, path, json=json, params=params, idempotent=idempotent)


def error_code(resp: Any) -> str | None:
    """The code of an error body: Lambda and Azure `{"error": {"code": "..."}}`; GCP
    `{"error": {"code": 409, "errors": [{"reason": ...}], "status": ...}}` gives the reason."""
    try:
        body = resp.json()
    except ValueError:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return None
    code = err.get("code")
    if isinstance(code, str):
        return code
    errors = err.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return str(errors[0].get("reason") or errors[0].get("code") or "") or None
    return str(err.get("status")) if err.get("status") else None


def instance_name(tags: dict[str, str], spec_name: str, attempt: int, limit: int = 63) -> str:
    """`finops-<job id>-a<attempt>`: lowercase letters, digits and '-', starting with a letter
    (GCP's and Azure's name rules), unique per attempt, so a retried create finds its own."""
    base = tags.get("finops-job-id") or spec_name
    raw = re.sub(r"[^a-z0-9-]+", "-", f"finops-{base}".lower()).strip("-")
    suffix = f"-a{attempt}"
    return raw[: limit - len(suffix)].rstrip("-") + suffix


def exit_code(checkpoint_uri: str | None, token: str | None) -> int | None:
    """The job's exit code, as `finops.jobs.local_wrap --store-exit` stored it; None if not yet."""
    if not checkpoint_uri or not token:
        return None
    from finops.jobs.stores import open_store

    blob = open_store(checkpoint_uri).get(f"exits/{token}")
    try:
        return None if blob is None else int(blob.decode())
    except ValueError:
        return None


def gcp_labels(tags: dict[str, str]) -> dict[str, str]:
    """GCP labels: keys start with a lowercase letter, keys and values <= 63 characters of
    lowercase letters, digits, '_' and '-' (at most 64 labels). Anything else becomes '-'."""
    out: dict[str, str] = {}
    for k, v in tags.items():
        key = re.sub(r"[^a-z0-9_-]", "-", k.lower())[:63]
        if not key or not key[0].isalpha():
            key = ("k" + key)[:63]
        out[key] = re.sub(r"[^a-z0-9_-]", "-", v.lower())[:63]
    return dict(list(out.items())[:64])


def azure_tags(tags: dict[str, str]) -> dict[str, str]:
    """Azure tags: names <= 512 characters without `< > % & \\ ? /`, values <= 256, control
    characters dropped; at most 50 tags."""
    out: dict[str, str] = {}
    for k, v in tags.items():
        key = re.sub(r"[<>%&\\?/\x00-\x1f\x7f]", "-", k)[:512] or "tag"
        out[key] = re.sub(r"[\x00-\x1f\x7f]", " ", v)[:256]
    return dict(list(out.items())[:50])


def lambda_tags(tags: dict[str, str]) -> list[dict[str, str]]:
    """Lambda Cloud tags (`[{key, value}]`): kept to letters, digits, '-', '_', '.', ':' and
    '=' (anything else becomes '-'), keys <= 55 and values <= 255 characters."""
    return [
        {
            "key": re.sub(r"[^A-Za-z0-9_.:=-]", "-", k)[:55] or "tag",
            "value": re.sub(r"[^A-Za-z0-9_.:=-]", "-", v)[:255],
        }
        for k, v in tags.items()
    ]
