"""Deferrable wait for a benchmark's results object (runs in the triggerer, not a worker slot).

One trigger for every results store: `s3://` is polled asynchronously through the Amazon
provider's async hook (aiobotocore, when installed; else the sync hook in a thread); `gs://` and Azure Blob (`https://<acct>.blob...`) through
their providers' sync hooks in a thread. Fires {"status": "found"} or {"status": "timeout"}.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from airflow.triggers.base import BaseTrigger, TriggerEvent

try:  # the Amazon provider's async hooks need aiobotocore (its `aiobotocore` extra)
    import aiobotocore  # noqa: F401

    _HAVE_AIOBOTOCORE = True
except ImportError:  # then poll through the sync hook in a thread: same result, one thread per poll
    _HAVE_AIOBOTOCORE = False


def split_uri(uri: str) -> tuple[str, str, str]:
    """-> (scheme, bucket or container, key). Blob URLs: https://acct.blob.core.windows.net/container/key."""
    p = urlsplit(uri)
    if p.scheme in ("s3", "gs"):
        return p.scheme, p.netloc, p.path.lstrip("/")
    if p.scheme in ("https", "http") and ".blob." in p.netloc:
        container, _, key = p.path.lstrip("/").partition("/")
        return "wasb", container, key
    raise ValueError(f"unsupported results URI scheme: {uri!r}")


def _hook(scheme: str, conn_id: str) -> Any:
    if scheme == "s3":
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        return S3Hook(aws_conn_id=conn_id)
    if scheme == "gs":
        from airflow.providers.google.cloud.hooks.gcs import GCSHook

        return GCSHook(gcp_conn_id=conn_id)
    from airflow.providers.microsoft.azure.hooks.wasb import WasbHook

    return WasbHook(wasb_conn_id=conn_id)


def _exists_sync(uri: str, hook: Any) -> bool:
    scheme, bucket, key = split_uri(uri)
    if scheme == "s3":
        return hook.check_for_key(key, bucket)
    if scheme == "gs":
        return hook.exists(bucket, key)
    return hook.check_for_blob(bucket, key)


async def _exists_s3_async(uri: str, conn_id: str) -> bool:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    _, bucket, key = split_uri(uri)
    hook = S3Hook(aws_conn_id=conn_id)
    async with await hook.get_async_conn() as client:
        head = await hook.get_head_object_async(client, key, bucket)
        return head is not None


class BenchResultsTrigger(BaseTrigger):
    """Poll `uri` every `poll_s` until it exists or `timeout_s` has passed since `started_at`."""

    def __init__(
        self, uri: str, conn_id: str, timeout_s: float, poll_s: float = 30.0, started_at: float | None = None
    ):
        super().__init__()
        self.uri = uri
        self.conn_id = conn_id
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        # wall-clock start survives a triggerer restart (the trigger is re-created from kwargs)
        self.started_at = started_at if started_at is not None else time.time()
        self._sync_hook: Any = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "finops.gpubench.triggers.BenchResultsTrigger",
            {
                "uri": self.uri,
                "conn_id": self.conn_id,
                "timeout_s": self.timeout_s,
                "poll_s": self.poll_s,
                "started_at": self.started_at,
            },
        )

    async def exists(self) -> bool:
        if self.uri.startswith("s3://") and _HAVE_AIOBOTOCORE:
            return await _exists_s3_async(self.uri, self.conn_id)
        if self._sync_hook is None:  # one hook (one client) for every poll of this trigger
            self._sync_hook = await asyncio.to_thread(_hook, split_uri(self.uri)[0], self.conn_id)
        return await asyncio.to_thread(_exists_sync, self.uri, self._sync_hook)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        polls = 0
        while True:
            polls += 1
            try:
                found = await self.exists()
                error = None
            except Exception as e:  # noqa: BLE001 - a flaky poll is retried until the timeout
                found, error = False, f"{type(e).__name__}: {e}"
                self.log.warning("polling %s failed: %s", self.uri, error)
            if found:
                yield TriggerEvent({"status": "found", "uri": self.uri, "polls": polls})
                return
            waited = time.time() - self.started_at
            if waited >= self.timeout_s:
                yield TriggerEvent(
                    {
                        "status": "timeout",
                        "uri": self.uri,
                        "polls": polls,
                        "waited_s": waited,
                        "last_error": error,
                    }
                )
                return
            await asyncio.sleep(min(self.poll_s, max(self.timeout_s - waited, 0.0)))
