"""The retry_policy every FinOps task gets (Airflow 3.3 `retry_policy`, evaluated on the worker
when a task raises): errors that fail the same way on every try end the task at once instead of
waiting out its retries (up to ~1 h of back-off), so the failure alert goes out now.

Not worth a retry:
- anything whose `retryable` attribute is False: finops errors (`ConfigError`, `DataRefused`,
  ...; finops.exceptions), finops.http_client errors for a 4xx other than 408 / 429 (a refused
  key, a missing resource, a bad request), google-auth's RefreshError for a revoked or invalid
  key (it sets `retryable` itself);
- credentials that are missing or refused by the cloud: botocore's NoCredentialsError and a
  ClientError whose code says so (ExpiredToken is left to retry: a refreshed role may fix it),
  azure-identity's CredentialUnavailableError and azure-core's ClientAuthenticationError.

Everything else falls through to the task's retries (RetryAction.DEFAULT). `fail_on_bad_input`
(finops.orchestration.failures) stays for the tasks that use it; this catches the same errors
raised anywhere else, with no code in the task body."""

from __future__ import annotations

from typing import Any

from airflow.sdk import RetryAction, RetryDecision, RetryPolicy

# botocore ClientError codes meaning "these credentials cannot do this", whatever the retry
_AWS_DENIED = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "AuthFailure",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
        "InvalidAccessKeyId",
    }
)
# (module, class) of credential errors no retry fixes; matched by name so that a cloud SDK that
# is not installed costs nothing here
_CREDENTIAL_ERRORS = frozenset(
    {
        ("botocore.exceptions", "NoCredentialsError"),
        ("azure.identity._exceptions", "CredentialUnavailableError"),
        ("azure.core.exceptions", "ClientAuthenticationError"),
    }
)


def _named(exc: BaseException) -> bool:
    return any((k.__module__, k.__name__) in _CREDENTIAL_ERRORS for k in type(exc).__mro__)


def _says_not_retryable(exc: BaseException) -> bool:
    """`retryable` False on an error that means it: ours, and google-auth's RefreshError (every
    google-auth error has the attribute, False by default, a TransportError's network fault too)."""
    if getattr(exc, "retryable", None) is not False:
        return False
    module = type(exc).__module__
    return module.startswith("finops.") or (
        module.startswith("google.auth") and type(exc).__name__ == "RefreshError"
    )


def permanent_reason(exc: BaseException) -> str | None:
    """Why `exc` will happen again on the next try, or None when a retry may help."""
    if _says_not_retryable(exc):
        return f"{type(exc).__name__} is not retryable"
    if _named(exc):
        return f"{type(exc).__name__}: the connection's credentials are missing or refused"
    response: Any = getattr(exc, "response", None)
    if isinstance(response, dict) and type(exc).__name__ == "ClientError":  # botocore
        code = (response.get("Error") or {}).get("Code")
        if code in _AWS_DENIED:
            return f"AWS refused the connection's credentials ({code})"
    return None


class PermanentErrorPolicy(RetryPolicy):
    """FAIL for errors a retry cannot fix (see the module doc); DEFAULT for everything else."""

    def evaluate(
        self, exception: BaseException, try_number: int, max_tries: int, context: Any = None
    ) -> RetryDecision:
        reason = permanent_reason(exception)
        if reason is None:
            return RetryDecision.default()
        return RetryDecision(action=RetryAction.FAIL, reason=f"not retried: {reason}")

    def serialize(self) -> dict[str, Any]:
        return {"__type": "PermanentErrorPolicy"}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> PermanentErrorPolicy:
        return cls()


PERMANENT_ERRORS = PermanentErrorPolicy()
