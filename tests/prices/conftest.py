from __future__ import annotations

import pytest

from tests.fixtures.prices import factory_for


@pytest.fixture
def wh_factory(duckdb_wh):
    """A job's warehouse factory that hands out the test's warehouse without closing it."""
    return factory_for(duckdb_wh)
