"""A small retrying JSON-over-HTTP client for the public price APIs.

Built on requests + tenacity rather than Airflow's HttpHook because (1) HttpHook's retry cannot
read a server's Retry-After header, and the Azure / Google APIs answer bursts with 429 +
Retry-After; (2) paging follows absolute next-page links (Azure NextPageLink) that HttpHook
would join onto its connection base URL. Credentials still come from Airflow connections
(`conn.py`); this module never sees where they came from and never logs them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from finops.prices.settings import HttpSettings

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class PriceSourceError(RuntimeError):
    """A price API answered something we cannot use (non-retryable status, not JSON, bad paging)."""


class RetryableHTTPError(PriceSourceError):
    def __init__(self, status: int, url: str, retry_after: float | None):
        super().__init__(
            f"HTTP {status} from {_safe(url)}" + (f" (Retry-After {retry_after:g}s)" if retry_after else "")
        )
        self.status = status
        self.retry_after = retry_after


def _safe(url: str) -> str:
    """The URL without its query string: never echo keys / filters into logs."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}{p.path}"


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def same_origin(url: str, base: str) -> bool:
    """True when `url` points at the same scheme/host/port as `base` (explicit default ports allowed)."""
    a, b = urlsplit(url), urlsplit(base)

    def port(p: Any) -> int | None:
        return p.port or {"http": 80, "https": 443}.get(p.scheme)

    return (
        a.scheme == b.scheme
        and (a.hostname or "").lower() == (b.hostname or "").lower()
        and port(a) == port(b)
    )


class HttpClient:
    """GET JSON with bounded retries: 429 waits Retry-After (capped), 5xx and connection errors
    back off exponentially. `sleep` is injectable so tests can record waits instead of taking them."""

    def __init__(
        self,
        settings: HttpSettings | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
    ):
        self.settings = settings or HttpSettings()
        self.session = session or requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": "airflow-finops/0.1"})
        if headers:
            self.session.headers.update(headers)
        self.session.auth = auth
        self._sleep = sleep
        self.requests_made = 0

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableHTTPError) and exc.retry_after is not None:
            return min(exc.retry_after, self.settings.retry_after_max_s)
        return wait_exponential(multiplier=self.settings.backoff_base_s, max=self.settings.backoff_max_s)(
            state
        )

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("price API attempt %d failed (%s); retrying", state.attempt_number, exc)

    def get_json(self, url: str, params: Mapping[str, Any] | None = None) -> Any:
        retrying = Retrying(
            stop=stop_after_attempt(self.settings.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type((RetryableHTTPError, requests.ConnectionError, requests.Timeout)),
            sleep=self._sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        return retrying(self._get_once, url, params)

    def _get_once(self, url: str, params: Mapping[str, Any] | None) -> Any:
        self.requests_made += 1
        resp = self.session.get(url, params=params, timeout=self.settings.timeout_s)
        if resp.status_code in RETRY_STATUSES:
            raise RetryableHTTPError(
                resp.status_code, url, parse_retry_after(resp.headers.get("Retry-After"))
            )
        if resp.status_code >= 400:
            raise PriceSourceError(f"HTTP {resp.status_code} from {_safe(url)}: {resp.text[:200]!r}")
        try:
            return resp.json()
        except ValueError as e:
            raise PriceSourceError(f"{_safe(url)} did not return JSON: {resp.text[:200]!r}") from e
