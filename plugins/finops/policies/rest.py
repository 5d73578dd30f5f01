"""A small REST client for the clouds reached over plain HTTP (GCP, Azure ARM, Lambda Cloud).

Why not each SDK: one code path with the same retry rules (429 honours Retry-After, 5xx
backs off exponentially) and a configurable base URL, so tests hit a local server speaking
the documented API shapes. Credentials come from a token callable built from an Airflow
connection; this module never reads secrets itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import requests

log = logging.getLogger(__name__)
TokenProvider = Callable[[], str | None]


class RestError(RuntimeError):
    def __init__(self, status: int, url: str, body: str):
        super().__init__(f"HTTP {status} from {url}: {body[:300]}")
        self.status = status


class RestClient:
    def __init__(
        self,
        base_url: str,
        token: TokenProvider | None = None,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
        timeout_s: float = 30.0,
    ):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.timeout_s = timeout_s
        self.session = requests.Session()

    def url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.base_url}/{path.lstrip('/')}"

    def request(self, method: str, path: str, **kw: Any) -> Any:
        url = self.url(path)
        headers = dict(kw.pop("headers", {}) or {})
        tok = self.token() if self.token else None
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        for attempt in range(self.retries + 1):
            resp = self.session.request(method, url, headers=headers, timeout=self.timeout_s, **kw)
            if resp.status_code == 429 or resp.status_code >= 500:
                if attempt == self.retries:
                    raise RestError(resp.status_code, url, resp.text)
                wait = self.backoff_s * (2**attempt)
                ra = resp.headers.get("Retry-After")
                if ra and ra.strip().isdigit():
                    wait = float(ra)
                wait = min(wait, self.max_wait_s)
                log.info("%s %s -> %s; retry in %.1fs", method, url, resp.status_code, wait)
                time.sleep(wait)
                continue
            if resp.status_code >= 400:
                raise RestError(resp.status_code, url, resp.text)
            return resp.json() if resp.content else {}
        raise AssertionError("unreachable")

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)
