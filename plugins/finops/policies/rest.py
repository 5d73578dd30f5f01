"""The policy engine's client for the clouds reached over plain HTTP (GCP, Azure ARM, Lambda
Cloud): finops.http_client with this engine's retry settings and its RestError. Token callables
are built from Airflow connections in clouds.py; nothing here reads secrets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from finops.http_client import HttpClient, HttpError, RetrySettings, TokenProvider

if TYPE_CHECKING:
    import requests

__all__ = ["RestClient", "RestError", "TokenProvider"]


class RestError(HttpError):
    """A failed call; inventories catch it and read `.status` (404: the resource is gone)."""


class RestClient(HttpClient):
    """`retries` after the first try; one cap (`max_wait_s`) for backoff and Retry-After alike.
    An empty body (202 Accepted, PATCH) reads as {} so callers can `.get()` on any answer."""

    error = RestError
    retryable_error = RestError

    def __init__(
        self,
        base_url: str,
        token: TokenProvider | None = None,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
        timeout_s: float = 30.0,
        session: requests.Session | None = None,
    ):
        super().__init__(
            base_url,
            token=token,
            session=session,
            settings=RetrySettings(retries + 1, backoff_s, max_wait_s, max_wait_s, timeout_s),
        )

    def request(self, method: str, path: str, **kw: Any) -> Any:
        out = super().request(method, path, **kw)
        return {} if out is None else out
