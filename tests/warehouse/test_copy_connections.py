"""How many connections a PostgreSQL partition load COPYs over, by default and when set."""

from __future__ import annotations

import pytest

from finops.warehouse import postgres_wh


@pytest.mark.parametrize(("cores", "expected"), [(1, 2), (2, 2), (4, 2), (6, 3), (8, 4), (64, 4)])
def test_default_is_half_the_cores_between_2_and_4(monkeypatch, cores, expected):
    monkeypatch.delenv(postgres_wh.COPY_CONNECTIONS_ENV, raising=False)
    monkeypatch.setattr(postgres_wh.os, "cpu_count", lambda: cores)
    assert postgres_wh.copy_connections_default() == expected


def test_the_environment_sets_it_and_a_bad_value_falls_back(monkeypatch, caplog):
    monkeypatch.setattr(postgres_wh.os, "cpu_count", lambda: 16)
    monkeypatch.setenv(postgres_wh.COPY_CONNECTIONS_ENV, "8")
    assert postgres_wh.copy_connections_default() == 8
    monkeypatch.setenv(postgres_wh.COPY_CONNECTIONS_ENV, "0")
    assert postgres_wh.copy_connections_default() == 1
    monkeypatch.setenv(postgres_wh.COPY_CONNECTIONS_ENV, "many")
    assert postgres_wh.copy_connections_default() == 4
    assert "is not an integer" in caplog.text
