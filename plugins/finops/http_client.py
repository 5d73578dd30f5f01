"""One retrying JSON-over-HTTP client for the APIs we reach without an SDK: the public price APIs,
the policy inventories / actions, the bench launchers and the Lambda Cloud source.

Built on requests + tenacity rather than Airflow's HttpHook or each cloud's SDK because
(1) HttpHook's retry cannot read a server's Retry-After, and Azure, Google and Lambda answer
bursts with 429 + Retry-After (seconds or an HTTP-date); (2) paging follows absolute next-page
links (Azure nextLink) that HttpHook would join onto its base URL; (3) one code path keeps the
retry rules the same everywhere, and a configurable base URL lets tests hit a local server.

Credentials come from Airflow connections elsewhere: the client is handed a token callable (or
static headers / auth) and never reads, logs or echoes secrets. URLs appear in logs and errors
without their query string, where API keys and filters may sit.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from finops.exceptions import CloudActionError

log = logging.getLogger(__name__)

TokenProvider = Callable[[], str | None]


class RetryPolicy(Protocol):
    """What a caller tunes. prices' HttpSettings (pydantic) satisfies it as is."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def backoff_base_s(self) -> float: ...
    @property
    def backoff_max_s(self) -> float: ...
    @property
    def retry_after_max_s(self) -> float: ...
    @property
    def timeout_s(self) -> float: ...


@dataclass(frozen=True)
class RetrySettings:
    """Attempts in all (first try included); exponential backoff base_s * 2**(n-1) capped at
    backoff_max_s; a server's Retry-After capped at retry_after_max_s; per-request timeout."""

    max_attempts: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    timeout_s: float = 30.0


class HttpError(CloudActionError, RuntimeError):
    """A call that failed for good. `status` is 0 when no response came; `url` has no query string.
    Callers subclass it to keep their own exception types (RestError, PriceSourceError, ...)."""

    def __init__(self, message: str, *, status: int = 0, url: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.url = url
        self.retry_after = retry_after
        self.retryable = False


class RetryableHttpError(HttpError):
    """429, 5xx or no response: worth another try (only 429 for a non-idempotent call)."""


def safe_url(url: str) -> str:
    """The URL without its query string: never echo keys / filters into logs."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}{p.path}"


_QUERY = re.compile(r"\?[^\s)'\"]*")


def _scrub(text: str) -> str:
    """Drop query strings from a transport error's text (urllib3 quotes the request path)."""
    return _QUERY.sub("", text)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP-date (RFC 9110 10.2.3); a date in the past
    means 0. Anything unreadable is None, so the caller falls back to its own backoff."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
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


def _detail(resp: requests.Response) -> str:
    """The API's own error message where it has one ({"error": {"message": ...}} in Azure, GCP
    and Lambda), else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err.get("code") or err)[:300]
    return str(err or body)[:300]


# No (complete) answer: the connection failed, timed out, or the body was cut off mid-way
# (requests reads it inside session.request). Status 0: retried when idempotent only.
_NO_RESPONSE = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)


def _retryable(status: int) -> bool:
    return status == 0 or status == 429 or status >= 500


class HttpClient:
    """JSON over HTTP with bounded retries: 429 / 5xx / no response are retried, waiting the
    server's Retry-After (capped) or backing off exponentially; other 4xx raise at once. A
    non-idempotent call is retried on 429 only (the server did not act on it), never on 5xx or
    a lost connection, where it may have. Relative paths join `base_url`; absolute ones (next-page
    links) must stay on its host, so the bearer token never follows a link elsewhere.

    Subclasses set `error` / `retryable_error` to raise their own types, and `allow_empty`
    to False where an empty body is as wrong as a non-JSON one. `sleep` is injectable so tests
    record waits instead of taking them."""

    error: type[HttpError] = HttpError
    retryable_error: type[HttpError] = RetryableHttpError
    allow_empty = True

    def __init__(
        self,
        base_url: str = "",
        *,
        token: TokenProvider | str | None = None,
        settings: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
        user_agent: str = "airflow-finops/0.1",
    ):
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.settings: RetryPolicy = settings or RetrySettings()
        self.session = session or requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": user_agent})
        if headers:
            self.session.headers.update(headers)
        if auth is not None:
            self.session.auth = auth
        self._sleep = sleep
        self.requests_made = 0

    def url(self, path: str) -> str:
        if urlsplit(path).scheme in ("http", "https"):
            if self.base_url and not same_origin(path, self.base_url):
                raise self.error(
                    f"refusing {safe_url(path)}: off the API host {safe_url(self.base_url)}",
                    url=safe_url(path),
                )
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = True,
    ) -> Any:
        """The decoded JSON body (None for an empty one where allowed)."""
        url = self.url(path)
        retrying = Retrying(
            stop=stop_after_attempt(self.settings.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(
                lambda e: isinstance(e, HttpError) and e.retryable and (idempotent or e.status == 429)
            ),
            sleep=self._sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                return self._once(method, url, params, json, headers, attempt.retry_state.attempt_number)
        raise AssertionError("unreachable: tenacity reraises the last error")

    def _auth(self) -> dict[str, str]:
        """Asked on every attempt: a refreshed token survives a long Retry-After."""
        tok = self._token() if callable(self._token) else self._token
        return {"Authorization": f"Bearer {tok}"} if tok else {}

    def _once(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None,
        attempt: int,
    ) -> Any:
        self.requests_made += 1
        try:
            resp = self.session.request(
                method,
                url,
                params=params,
                json=json,
                headers={**(headers or {}), **self._auth()},
                timeout=self.settings.timeout_s,
            )
        except _NO_RESPONSE as e:
            raise self._fail(method, url, 0, attempt, f"{type(e).__name__}: {_scrub(str(e))}") from None
        except requests.RequestException as e:  # invalid URL, redirect loop: a retry cannot help
            raise self.error(
                f"{method} {safe_url(url)}: {type(e).__name__}: {_scrub(str(e))}", url=safe_url(url)
            ) from None
        status = resp.status_code
        if status >= 400:
            ra = parse_retry_after(resp.headers.get("Retry-After")) if _retryable(status) else None
            raise self._fail(method, url, status, attempt, _detail(resp), ra)
        if not resp.content and self.allow_empty:
            return None
        try:
            return resp.json()
        except ValueError as e:
            raise self.error(
                f"{method} {safe_url(url)} did not return JSON: {resp.text[:200]!r}",
                status=status,
                url=safe_url(url),
            ) from e

    def _fail(
        self, method: str, url: str, status: int, attempts: int, detail: str, retry_after: float | None = None
    ) -> HttpError:
        retryable = _retryable(status)
        what = f"HTTP {status}" if status else "no response"
        msg = f"{method} {safe_url(url)}: {what} after {attempts} attempt(s): {detail}"
        if retry_after is not None:
            msg += f" (Retry-After {retry_after:g}s)"
        err = (self.retryable_error if retryable else self.error)(
            msg, status=status, url=safe_url(url), retry_after=retry_after
        )
        err.retryable = retryable
        return err

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, HttpError) and exc.retry_after is not None:
            return min(exc.retry_after, self.settings.retry_after_max_s)
        return wait_exponential(multiplier=self.settings.backoff_base_s, max=self.settings.backoff_max_s)(
            state
        )

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "%s; retry %d/%d in %.1fs", exc, state.attempt_number, self.settings.max_attempts - 1, wait
        )
