"""Where checkpoints live: a local directory or an S3 prefix, behind one small interface.

Runs on the training host: no Airflow import, boto3 only when an s3:// URI is opened. Each
`put` is atomic for its one object (local: temp file + fsync + rename + directory fsync;
S3: a PUT is all-or-nothing); the checkpoint layer makes a multi-object checkpoint atomic by
writing its commit marker last.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, Protocol


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


def open_store(uri: str, s3_client: Any | None = None) -> Store:
    """The store for a checkpoint URI (already validated by the job spec)."""
    if uri.startswith("s3://"):
        bucket, _, prefix = uri[len("s3://") :].partition("/")
        return S3Store(bucket, prefix, s3_client)
    if uri.startswith(("gs://", "az://")):
        raise ValueError(
            f"checkpoint_uri {uri!r}: the {uri[:5]} backend is not available yet; use s3:// or a local path"
        )
    if not uri.startswith("/"):
        raise ValueError(f"checkpoint_uri {uri!r}: must be s3:// or an absolute local path")
    return LocalStore(uri)
