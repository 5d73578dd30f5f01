from __future__ import annotations

from contextlib import contextmanager

import pytest


@pytest.fixture
def wh_factory(duckdb_wh):
    """A job's warehouse factory that hands out the test's warehouse without closing it."""

    @contextmanager
    def factory():
        yield duckdb_wh

    return factory


def factory_for(wh):
    @contextmanager
    def factory():
        yield wh

    return factory
