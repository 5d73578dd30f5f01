"""The package's error hierarchy: every error finops raises on purpose derives from `FinopsError`.

The branch an error sits on says what a retry can do, which is what a DAG task needs to know
(`finops.orchestration.failures.fail_on_bad_input` turns every error whose `retryable` is False,
the first two branches by default, into a failure without retries, in one place):

- `ConfigError`: finops.yaml, a policy / job spec or a run's Params is wrong; the message names
  the key. Nothing changes until a person edits it, so retrying only delays the alert.
- `DataRefused`: the input data itself was rejected (the billing spine quarantines it); the same
  delivery fails the same way on every try.
- `CloudActionError`: a cloud API call was refused or failed (throttling, a network error, an
  instance that would not start or stop); often transient, so it retries.
- `WarehouseError`: the warehouse failed to read or write (a lock, a lost connection).

Classes that callers already catch as `ValueError` / `RuntimeError` keep that base too, so
adding the hierarchy changed no `except` clause's behaviour."""

from __future__ import annotations


class FinopsError(Exception):
    """Base of every error this package raises on purpose (not of bugs: those stay TypeError,
    KeyError...). `retryable` False: the same call fails the same way, so a task fails at once."""

    retryable: bool = True


class ConfigError(FinopsError, ValueError):
    """A configuration problem (finops.yaml, a spec file, a run's Params), phrased as
    `path.to.key: reason`; a retry cannot fix it."""

    retryable = False


class DataRefused(FinopsError):
    """Input data rejected as it is (a malformed file, a value the warehouse cannot store, a
    results document of the wrong shape): quarantined or refused, never worth a retry."""

    retryable = False


class CloudActionError(FinopsError):
    """A call to a cloud or SaaS API was refused or failed; subclasses say whether it may pass
    on a retry (`finops.http_client.RetryableHttpError`)."""


class WarehouseError(FinopsError, RuntimeError):
    """The warehouse could not complete a read or a write (a lock, a lost connection, a failed
    statement); rolled back."""
