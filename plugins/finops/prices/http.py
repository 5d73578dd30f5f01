"""The price APIs' client: finops.http_client with the `prices.http` settings and the price
fetchers' own error types. Azure paging checks next-page links with `same_origin`; the
retry / Retry-After / query-stripping rules live in finops.http_client."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import requests

from finops import http_client
from finops.http_client import TokenProvider, parse_retry_after, same_origin
from finops.prices.settings import HttpSettings

__all__ = ["HttpClient", "PriceSourceError", "RetryableHTTPError", "parse_retry_after", "same_origin"]


class PriceSourceError(http_client.HttpError):
    """A price API answered something we cannot use (non-retryable status, not JSON, bad paging)."""


class RetryableHTTPError(PriceSourceError, http_client.RetryableHttpError):
    """429 / 5xx / no response still failing after the last attempt."""


class HttpClient(http_client.HttpClient):
    """GET JSON from absolute URLs (no base URL: each fetcher builds its own); an empty body is an
    error like any non-JSON one."""

    error = PriceSourceError
    retryable_error = RetryableHTTPError
    allow_empty = False

    def __init__(
        self,
        settings: HttpSettings | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
        token: TokenProvider | str | None = None,
    ):
        super().__init__(
            settings=settings or HttpSettings(),
            headers=headers,
            auth=auth,
            sleep=sleep,
            session=session,
            token=token,
        )

    def get_json(self, url: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.get(url, params=params)
