"""The launchers' client for the APIs without an SDK we want (Lambda Cloud, GCP Compute, Azure
ARM): finops.http_client with the launchers' settings and ApiError. A non-idempotent POST
(`idempotent=False`) is retried on 429 only, never on 5xx or a lost connection: the launcher
looks for what it may have created instead."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from finops.http_client import HttpClient, HttpError, RetrySettings, TokenProvider

if TYPE_CHECKING:
    import requests

__all__ = ["ApiError", "RestClient"]


class ApiError(HttpError):
    """A failed call; launchers read `.status` (404 on delete: already gone)."""


class RestClient(HttpClient):
    """One cap (`max_wait_s`) for backoff and Retry-After alike; `token` a key or a callable;
    `session` the connection's transport (finops.connections.http_session)."""

    error = ApiError
    retryable_error = ApiError

    def __init__(
        self,
        base_url: str,
        token: TokenProvider | str | None,
        *,
        max_attempts: int = 5,
        backoff_s: float = 1.0,
        max_wait_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout_s: float = 30.0,
        session: requests.Session | None = None,
    ):
        super().__init__(
            base_url,
            token=token,
            sleep=sleep,
            user_agent="airflow-finops-bench/0.1",
            session=session,
            settings=RetrySettings(max_attempts, backoff_s, max_wait_s, max_wait_s, timeout_s),
        )

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = True,
    ) -> Any:
        return self.request(method, path, json=json, params=params, idempotent=idempotent)
