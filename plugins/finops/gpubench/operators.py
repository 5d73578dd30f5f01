"""Airflow edge of the benchmark: the deferrable wait operator, and the functions that turn
connections into what lifecycle.py takes (upload-URL signer, bundle store, results reader)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator

from finops.gpubench.triggers import BenchResultsTrigger, split_uri


def make_presign(conn_id: str) -> Callable[[str, int], str]:
    """(s3://bucket/key, seconds) -> a pre-signed PUT URL for exactly that object."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    hook = S3Hook(aws_conn_id=conn_id)

    def presign(uri: str, expires_in: int) -> str:
        _, bucket, key = split_uri(uri)
        url = hook.generate_presigned_url(
            "put_object",
            params={"Bucket": bucket, "Key": key, "ContentType": "application/json"},
            expires_in=expires_in,
        )
        if not url:
            raise RuntimeError(f"could not pre-sign an upload URL for {uri}")
        return url

    return presign


def make_payload_store(settings: Any) -> Any:
    """The S3 store for bundles too big for user data (payload.py), on the results connection;
    None when no configured target can need one or benchmarks.results_bucket is unset (a launch
    that needs it then says so)."""
    from finops.gpubench.payload import S3PayloadStore, may_fetch

    if not settings.results_bucket or not may_fetch(settings):
        return None
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from botocore.config import Config

    # SigV4 pre-signed GETs (every region takes them; the X-Amz-Expires lifetime is explicit)
    client = S3Hook(aws_conn_id=settings.results_conn_id, config=Config(signature_version="s3v4")).get_conn()
    return S3PayloadStore(client, settings.results_bucket, settings.results_prefix)


def make_reader(conn_id: str) -> Callable[[str], str]:
    """uri -> text of the object, for s3://, gs:// and Azure Blob URLs."""

    def read(uri: str) -> str:
        scheme, bucket, key = split_uri(uri)
        if scheme == "s3":
            from airflow.providers.amazon.aws.hooks.s3 import S3Hook

            return S3Hook(aws_conn_id=conn_id).read_key(key, bucket)
        if scheme == "gs":
            from airflow.providers.google.cloud.hooks.gcs import GCSHook

            return GCSHook(gcp_conn_id=conn_id).download(bucket, key).decode()
        from airflow.providers.microsoft.azure.hooks.wasb import WasbHook

        return WasbHook(wasb_conn_id=conn_id).read_file(bucket, key)

    return read


def results_conn(settings: Any, target: dict[str, Any]) -> str:
    """Which connection reads a target's results: the S3 one unless the target stores elsewhere."""
    return target.get("results_conn_id") or settings.results_conn_id


class WaitForBenchResultsOperator(BaseOperator):
    """Defer until the launched benchmark's results object exists; fail (reported) on timeout.

    `launched` is the launch task's output. A dry-run launch returns at once."""

    template_fields: Sequence[str] = ("launched",)

    def __init__(
        self, *, launched: Any, timeout_minutes: float | None = None, poll_s: float = 30.0, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.launched = launched
        self.timeout_minutes = timeout_minutes
        self.poll_s = poll_s

    def execute(self, context: Any) -> dict[str, Any]:
        from finops.gpubench.settings import get_settings

        info = self.launched
        if info.get("dry_run"):
            return {"status": "dry_run", "uri": info["results_uri"]}
        settings = get_settings()
        minutes = self.timeout_minutes or settings.wait_timeout_minutes
        self.defer(
            trigger=BenchResultsTrigger(
                info["results_uri"],
                results_conn(settings, info["target"]),
                timeout_s=minutes * 60,
                poll_s=self.poll_s,
            ),
            method_name="execute_complete",
            timeout=timedelta(minutes=minutes + 5),
        )
        raise AssertionError("unreachable: defer raises")

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        event = event or {}
        if event.get("status") == "found":
            return event
        from finops.gpubench.lifecycle import report_failure
        from finops.warehouse import connect

        msg = (
            f"results never arrived at {self.launched['results_uri']} "
            f"({event.get('status', 'no event')}, waited {event.get('waited_s', 0):.0f}s)"
        )
        wh = connect()
        try:
            report_failure(wh, self.launched, "timeout", msg, kind="wait")
        finally:
            wh.close()
        raise TimeoutError(msg)
