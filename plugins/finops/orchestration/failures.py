"""Which errors end a task at once: the one place DAG tasks translate package errors for Airflow.

A bad finops.yaml, a bad Param or refused input data fails the same way on every try, so the
task fails now (`AirflowFailException`: no retries, the failure alert goes out at once). So does
any other `FinopsError` that says `retryable = False` (a policy run whose actions partly failed:
a retry would repeat the others). Anything else (a cloud call, a warehouse lock, a bug)
propagates and retries as configured."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from airflow.sdk.exceptions import AirflowFailException

from finops.exceptions import FinopsError


@contextmanager
def fail_on_bad_input() -> Iterator[None]:
    """Run a task body; a `FinopsError` that is not `retryable` (`ConfigError`, `DataRefused`...)
    becomes an `AirflowFailException` with the same message (the chained traceback is dropped:
    the message names the key or the data). Everything else propagates unchanged."""
    try:
        yield
    except FinopsError as e:
        if e.retryable:
            raise
        raise AirflowFailException(str(e)) from None
