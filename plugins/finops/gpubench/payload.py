"""The benchmark package when it outgrows a cloud's startup script: the bundle goes to the
benchmark's S3 bucket, and the user data carries only a short-lived pre-signed GET URL and the
bundle's SHA-256 (the instance curls it, checks the hash, then runs), as kOps's user data does
with nodeup: the user data stays a small loader, the payload lives in storage.

The object is `s3://<results_bucket>/<results_prefix>/payloads/<bench run id>.tar.gz`, one per
bench run: a retried launch re-uploads the same bytes (the bundle is deterministic) to the same
key, so an instance launched by an earlier try still finds what its hash expects. It is deleted
wherever the instance is ended: a failed launch, the teardown, and the reaper (which also sweeps
any payload older than the TTL: no instance can still need it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from finops.exceptions import ConfigError
from finops.gpubench import bootstrap
from finops.gpubench.settings import BenchSettings

log = logging.getLogger(__name__)
# the pre-signed GET lives long enough for a slow boot (spot capacity, Lambda's 5-10 minute
# boots), never longer than the instance's own TTL
URL_TTL_S = 1800
# room left for a pre-signed URL when judging whether a target's script can fit (may_fetch)
URL_ALLOWANCE = 4096


def payload_key(prefix: str, bench_run_id: str) -> str:
    prefix = prefix.strip("/")
    return f"{prefix}/payloads/{bench_run_id}.tar.gz" if prefix else f"payloads/{bench_run_id}.tar.gz"


class PayloadStore(Protocol):
    """Where bundles wait for their instance (S3PayloadStore; anything with these four calls)."""

    def uri(self, bench_run_id: str) -> str: ...

    def put(self, bench_run_id: str, data: bytes, sha256: str) -> None: ...

    def presign_get(self, bench_run_id: str, expires_in_s: int) -> str: ...

    def delete(self, bench_run_id: str) -> None: ...

    def sweep(self, older_than: datetime) -> list[str]: ...


class S3PayloadStore:
    """Bundles in the benchmark's S3 bucket, through a boto3 S3 client (the results connection's)."""

    def __init__(self, client: Any, bucket: str, prefix: str):
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    def key(self, bench_run_id: str) -> str:
        return payload_key(self.prefix, bench_run_id)

    def uri(self, bench_run_id: str) -> str:
        return f"s3://{self.bucket}/{self.key(bench_run_id)}"

    def put(self, bench_run_id: str, data: bytes, sha256: str) -> None:
        self.client.put_object(
            Bucket=self.bucket,
            Key=self.key(bench_run_id),
            Body=data,
            ContentType="application/gzip",
            Metadata={"sha256": sha256},
        )

    def presign_get(self, bench_run_id: str, expires_in_s: int) -> str:
        url: str = self.client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": self.key(bench_run_id)},
            ExpiresIn=expires_in_s,
        )
        return url

    def delete(self, bench_run_id: str) -> None:
        """Idempotent: S3 answers a delete of a missing key with success."""
        self.client.delete_object(Bucket=self.bucket, Key=self.key(bench_run_id))

    def sweep(self, older_than: datetime) -> list[str]:
        """Delete every payload last written before `older_than`; returns the keys deleted."""
        gone: list[str] = []
        prefix = payload_key(self.prefix, "")[: -len(".tar.gz")]
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                if obj["LastModified"] < older_than:
                    self.client.delete_object(Bucket=self.bucket, Key=obj["Key"])
                    gone.append(obj["Key"])
        return gone


def may_fetch(settings: BenchSettings) -> bool:
    """Could a launch of any configured target need the bundle store? Its script is rendered with
    a pre-signed URL of URL_ALLOWANCE characters standing in for the real ones (a session token
    makes them long). Only then is the store built: a deployment whose scripts always fit never
    touches S3 for bundles (it may have no AWS credentials at all)."""
    fake = "https://example.invalid/" + "x" * URL_ALLOWANCE
    for t in settings.targets:
        context = {
            "bench_run_id": "0" * 20,
            "provider": t.provider,
            "region": t.region,
            "instance_type": t.instance_type,
            "pricing_model": t.pricing_model,
        }
        script = bootstrap.render(
            upload=bootstrap.presigned_put_upload(fake),
            ttl_minutes=settings.ttl_minutes,
            bench_args=settings.suite_args(),
            context=context,
        )
        if len(script.encode()) > bootstrap.limit(t.provider):
            return True
    return False


@dataclass(frozen=True)
class Staged:
    """The rendered user data and, when the bundle travels separately, where and what it is."""

    user_data: str
    provider: str
    limit_bytes: int
    bundle_bytes: int
    sha256: str
    payload_uri: str | None = None  # None: the bundle is inline
    uploaded: bool = False

    @property
    def user_data_bytes(self) -> int:
        return len(self.user_data.encode())

    def evidence(self) -> dict[str, Any]:
        """For the launch audit row: how the package reached the instance."""
        ev: dict[str, Any] = {
            "payload": "fetched" if self.payload_uri else "inline",
            "user_data_limit_bytes": self.limit_bytes,
            "bundle_sha256": self.sha256,
            "bundle_bytes": self.bundle_bytes,
        }
        if self.payload_uri:
            ev["payload_uri"] = self.payload_uri
            ev["payload_uploaded"] = self.uploaded
        return ev


def stage(
    *,
    provider: str,
    bench_run_id: str,
    upload: str,
    ttl_minutes: int,
    bench_args: list[str],
    context: dict[str, str],
    bucket: str | None,
    prefix: str,
    store: PayloadStore | None,
    dry_run: bool,
) -> Staged:
    """The user data for one launch. Inline when it fits the provider's limit; else the bundle is
    uploaded to `store` and fetched by a pre-signed URL (a dry run uploads nothing and renders the
    fetch step against the object's s3:// address). No bucket configured -> ConfigError naming the
    key; a script still over the limit -> ValueError (nothing launched either way)."""
    args = [*bench_args, *(f"--context={k}={v}" for k, v in sorted(context.items()))]
    data = bootstrap.bundle(bootstrap.wants_serving(args))
    sha = bootstrap.sha256_hex(data)
    cap = bootstrap.limit(provider)
    inline = bootstrap.render(
        upload=upload,
        ttl_minutes=ttl_minutes,
        bench_args=bench_args,
        context=context,
        payload_step=bootstrap.inline_step(data),
    )
    if len(inline.encode()) <= cap:
        return Staged(inline, provider, cap, len(data), sha)
    if not bucket:
        raise ConfigError(
            f"benchmarks.results_bucket is not set: the {provider} startup script is {len(inline.encode())} bytes, "
            f"over the {cap}-byte user-data limit, so the benchmark bundle must be fetched from S3; set "
            "benchmarks.results_bucket to a bucket that benchmarks.results_conn_id can write"
        )
    url_ttl = min(URL_TTL_S, ttl_minutes * 60)
    uri = f"s3://{bucket}/{payload_key(prefix, bench_run_id)}"
    if dry_run:  # the fetch step is rendered, nothing is uploaded
        url, uploaded = uri, False
    elif store is None:
        raise ValueError(f"the {provider} bundle must be fetched from {uri}, but no payload store was given")
    else:
        store.put(bench_run_id, data, sha)
        uploaded = True
        try:
            url = store.presign_get(bench_run_id, url_ttl)
        except Exception:
            store.delete(bench_run_id)
            raise
    script = bootstrap.render(
        upload=upload,
        ttl_minutes=ttl_minutes,
        bench_args=bench_args,
        context=context,
        payload_step=bootstrap.fetch_step(url, sha),
    )
    if len(script.encode()) > cap:
        if store is not None and uploaded:
            store.delete(bench_run_id)
        raise ValueError(
            f"the {provider} startup script is {len(script.encode())} bytes even with the bundle "
            f"fetched from {uri}, over its {cap}-byte limit"
        )
    return Staged(script, provider, cap, len(data), sha, uri, uploaded)


def drop(store: PayloadStore | None, bench_run_id: str) -> str | None:
    """Delete a run's bundle (a no-op when it never had one); the error text, never raised: the
    callers are cleanup paths that must go on ending instances."""
    if store is None:
        return None
    try:
        store.delete(bench_run_id)
    except Exception as e:  # noqa: BLE001 - reported by the caller
        log.error("deleting the benchmark bundle of %s failed: %s", bench_run_id, e)
        return f"payload {store.uri(bench_run_id)}: {type(e).__name__}: {e}"
    return None
