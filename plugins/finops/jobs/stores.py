"""Where checkpoints live: a local directory, an S3 or GCS prefix, or an Azure Blob container
prefix, behind one small interface.

Runs on the training host: no Airflow import; boto3, google-auth / requests or
azure-storage-blob only when a URI of that scheme is opened. Each `put` is atomic for its one
object (local: temp file + fsync + rename + directory fsync; S3: a PUT is all-or-nothing; GCS:
a single-request media upload creates the object only when the whole body has arrived; Azure:
an upload is visible only once its Put Blob / Put Block List commits); the checkpoint layer
makes a multi-object checkpoint atomic by writing its commit marker last.

Where the cloud stores connect:
- gs://bucket/prefix: `STORAGE_EMULATOR_HOST` (an emulator, anonymous) when set, else
  https://storage.googleapis.com with Application Default Credentials (the instance's
  service account on GCE).
- az://container/prefix: `AZURE_STORAGE_CONNECTION_STRING` when set, else the account named
  by `AZURE_STORAGE_ACCOUNT` with DefaultAzureCredential (the VM's managed identity).
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from finops.exceptions import CloudActionError


class Store(Protocol):
    def put(self, name: str, data: bytes) -> None: ...
    def get(self, name: str) -> bytes | None: ...
    def list(self) -> list[str]: ...
    def delete(self, name: str) -> None: ...


def _check_name(name: str) -> str:
    parts = name.split("/")
    if not name or any(p in ("", ".", "..") for p in parts) or "\x00" in name:
        raise ValueError(f"checkpoint object name {name!r} must be relative, without '.', '..' or '//'")
    return name


class LocalStore:
    """A directory; names are relative paths inside it. Temp files start with '.tmp-' and are
    never listed, so a crash mid-write leaves nothing that looks like data."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, name: str) -> Path:
        return self.root / _check_name(name)

    def put(self, name: str, data: bytes) -> None:
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}-{secrets.token_hex(6)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)

    def get(self, name: str) -> bytes | None:
        try:
            return self._path(name).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def list(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and not p.name.startswith(".tmp-")
        )

    def delete(self, name: str) -> None:
        path = self._path(name)
        path.unlink(missing_ok=True)
        if path.parent != self.root:
            try:
                path.parent.rmdir()  # only when empty
            except OSError:
                pass


def _fsync_dir(path: Path) -> None:
    """The rename is durable only once its directory entry is on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class S3Store:
    """An S3 prefix. The client is boto3's default chain (instance role, env, AWS_ENDPOINT_URL
    for S3-compatible stores) unless one is passed in."""

    def __init__(self, bucket: str, prefix: str, client: Any | None = None) -> None:
        if client is None:
            import boto3  # lazily: local-path jobs do not need it on the instance

            client = boto3.client("s3")
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def put(self, name: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + _check_name(name), Body=data)

    def get(self, name: str) -> bytes | None:
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self.prefix + _check_name(name))
        except self.client.exceptions.NoSuchKey:
            return None
        return resp["Body"].read()

    def list(self) -> list[str]:
        names = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            names += [o["Key"][len(self.prefix) :] for o in page.get("Contents", [])]
        return sorted(names)

    def delete(self, name: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + _check_name(name))


GCS_ENDPOINT = "https://storage.googleapis.com"
_GCS_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
_RETRY_STATUS = (429, 500, 502, 503, 504)


class GCSError(CloudActionError, RuntimeError):
    """A GCS JSON API call that failed for a reason other than 'no such object'."""


class GCSStore:
    """A GCS prefix through the JSON API (objects insert / get / list / delete), over a
    requests session: google-auth's AuthorizedSession on a real bucket, a plain session on an
    emulator. Every name goes in the URL percent-encoded ('/' included), as the API requires.
    Transient statuses (429, 5xx) are retried with backoff; a PUT of the same bytes is
    idempotent, so retrying it is safe."""

    def __init__(
        self, bucket: str, prefix: str, session: Any | None = None, endpoint: str | None = None,
        retries: int = 4,
    ) -> None:  # fmt: skip
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        self.endpoint = (endpoint or emulator or GCS_ENDPOINT).rstrip("/")
        if session is None:
            if emulator and endpoint is None:
                import requests

                session = requests.Session()
            else:
                import google.auth
                from google.auth.transport.requests import AuthorizedSession

                creds, _ = google.auth.default(scopes=[_GCS_SCOPE])
                session = AuthorizedSession(creds)
        self.session = session
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.retries = retries

    def _call(self, method: str, url: str, ok_missing: bool = False, **kw: Any) -> Any:
        for attempt in range(self.retries + 1):
            resp = self.session.request(method, url, timeout=(10, 600), **kw)
            if resp.status_code in _RETRY_STATUS and attempt < self.retries:
                time.sleep(min(0.25 * 2**attempt, 8.0))
                continue
            if resp.status_code == 404 and ok_missing:
                return None
            if resp.status_code >= 300:
                raise GCSError(f"GCS {method} {url.split('?')[0]}: HTTP {resp.status_code} {resp.text[:300]}")
            return resp
        raise AssertionError("unreachable")

    def _object_url(self, name: str) -> str:
        key = quote(self.prefix + _check_name(name), safe="")
        return f"{self.endpoint}/storage/v1/b/{quote(self.bucket, safe='')}/o/{key}"

    def put(self, name: str, data: bytes) -> None:
        self._call(
            "POST", f"{self.endpoint}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o",
            params={"uploadType": "media", "name": self.prefix + _check_name(name)}, data=data,
            headers={"Content-Type": "application/octet-stream"},
        )  # fmt: skip

    def get(self, name: str) -> bytes | None:
        resp = self._call("GET", self._object_url(name), ok_missing=True, params={"alt": "media"})
        return None if resp is None else bytes(resp.content)

    def list(self) -> list[str]:
        names: list[str] = []
        params = {"prefix": self.prefix, "fields": "items(name),nextPageToken"}
        url = f"{self.endpoint}/storage/v1/b/{quote(self.bucket, safe='')}/o"
        while True:
            page = self._call("GET", url, params=params).json()
            names += [o["name"][len(self.prefix) :] for o in page.get("items", [])]
            token = page.get("nextPageToken")
            if not token:
                return sorted(names)
            params = {**params, "pageToken": token}

    def delete(self, name: str) -> None:
        self._call("DELETE", self._object_url(name), ok_missing=True)


class AzureBlobStore:
    """An Azure Blob container prefix (azure-storage-blob). `upload_blob` commits the whole
    blob in one Put Blob, or Put Block List for a large one: uncommitted blocks are never
    listed or readable, so a killed upload leaves nothing that looks like data."""

    def __init__(self, container: str, prefix: str, client: Any | None = None) -> None:
        if client is None:
            from azure.storage.blob import ContainerClient

            conn = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
            if conn:
                client = ContainerClient.from_connection_string(conn, container)
            else:
                account = os.environ.get("AZURE_STORAGE_ACCOUNT")
                if not account:
                    raise ValueError(
                        "az:// checkpoints need AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING)"
                    )
                from azure.identity import DefaultAzureCredential

                client = ContainerClient(
                    f"https://{account}.blob.core.windows.net", container, credential=DefaultAzureCredential()
                )
        self.client = client
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def put(self, name: str, data: bytes) -> None:
        self.client.upload_blob(self.prefix + _check_name(name), data, overwrite=True)

    def get(self, name: str) -> bytes | None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            return bytes(self.client.download_blob(self.prefix + _check_name(name)).readall())
        except ResourceNotFoundError:
            return None

    def list(self) -> list[str]:
        return sorted(
            b.name[len(self.prefix) :] for b in self.client.list_blobs(name_starts_with=self.prefix)
        )

    def delete(self, name: str) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            self.client.delete_blob(self.prefix + _check_name(name))
        except ResourceNotFoundError:
            pass


def open_store(uri: str, s3_client: Any | None = None) -> Store:
    """The store for a checkpoint URI (already validated by the job spec)."""
    scheme, sep, rest = uri.partition("://")
    bucket, _, prefix = rest.partition("/")
    if sep and scheme == "s3":
        return S3Store(bucket, prefix, s3_client)
    if sep and scheme == "gs":
        return GCSStore(bucket, prefix)
    if sep and scheme == "az":
        return AzureBlobStore(bucket, prefix)
    if not uri.startswith("/"):
        raise ValueError(f"checkpoint_uri {uri!r}: must be s3://, gs://, az:// or an absolute local path")
    return LocalStore(uri)
