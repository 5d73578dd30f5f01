"""A small JSON REST client for the launch APIs without an SDK we want (Lambda Cloud, GCP
Compute, Azure ARM): bearer auth, bounded retries on 429 (honouring Retry-After) and, for
idempotent calls only, on 5xx / connection errors. A non-idempotent POST that fails is never
blindly retried: the launcher looks for what it may have created instead."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests

log = logging.getLogger(__name__)


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def _retry_after(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


class RestClient:
    def __init__(self, base_url: str, token: Callable[[], str] | str | None, *, max_attempts: int = 5,
                 backoff_s: float = 1.0, max_wait_s: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                 timeout_s: float = 30.0):
        self.base = base_url.rstrip("/")
        self._token = token
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": "airflow-finops-bench/0.1"})

    def _auth(self) -> dict[str, str]:
        tok = self._token() if callable(self._token) else self._token
        return {"Authorization": f"Bearer {tok}"} if tok else {}

    def url(self, path: str) -> str:
        return path if urlsplit(path).scheme else f"{self.base}/{path.lstrip('/')}"

    def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
             idempotent: bool = True) -> Any:
        url = self.url(path)
        for attempt in range(1, self.max_attempts + 1):
            try:
                r = self.session.request(method, url, json=json, params=params, headers=self._auth(),
                                         timeout=self.timeout_s)
            except (requests.ConnectionError, requests.Timeout) as e:
                if not idempotent or attempt == self.max_attempts:
                    raise ApiError(0, f"{method} {urlsplit(url).path}: {e}") from e
                self.sleep(min(self.backoff_s * 2 ** (attempt - 1), self.max_wait_s))
                continue
            if r.status_code == 429 or (idempotent and r.status_code >= 500):
                if attempt < self.max_attempts:
                    wait = _retry_after(r.headers.get("Retry-After"))
                    wait = wait if wait is not None else self.backoff_s * 2 ** (attempt - 1)
                    log.warning("%s %s -> %s; retry in %.1fs", method, urlsplit(url).path, r.status_code, wait)
                    self.sleep(min(wait, self.max_wait_s))
                    continue
            if r.status_code >= 400:
                raise ApiError(r.status_code, f"{method} {urlsplit(url).path}: {_message(r)}")
            if not r.content:
                return None
            return r.json()
        raise AssertionError("unreachable")


def _message(r: requests.Response) -> str:
    try:
        body = r.json()
    except ValueError:
        return r.text[:300]
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err.get("code") or err)[:300]
    return str(err or body)[:300]
