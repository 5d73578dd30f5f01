"""qmark -> psycopg placeholder translation (pure)."""

from __future__ import annotations

import pytest

from finops.warehouse.base import WarehouseError
from finops.warehouse.qmark import to_pyformat, translate


@pytest.mark.parametrize(
    ("sql", "expected", "n"),
    [
        ("SELECT ?", "SELECT %s", 1),
        ("SELECT '?' , ?", "SELECT '?' , %s", 1),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s", 1),
        ("SELECT E'it\\'s ?', ?", "SELECT E'it\\'s ?', %s", 1),
        ('SELECT "we?ird" FROM t WHERE a = ?', 'SELECT "we?ird" FROM t WHERE a = %s', 1),
        ("SELECT 1 -- why?\n, ?", "SELECT 1 -- why?\n, %s", 1),
        ("SELECT /* ? */ ?", "SELECT /* ? */ %s", 1),
        ("SELECT $$ ? $$, $fn$ ' ? $fn$, ?", "SELECT $$ ? $$, $fn$ ' ? $fn$, %s", 1),
        ("SELECT 7 % 2 WHERE x LIKE '%a%' AND y = ?", "SELECT 7 %% 2 WHERE x LIKE '%%a%%' AND y = %s", 1),
        ("SELECT $1, ?", "SELECT $1, %s", 1),
        ("SELECT 1", "SELECT 1", 0),
    ],
)
def test_translation(sql, expected, n):
    assert to_pyformat(sql) == (expected, n)


def test_placeholder_count_must_match():
    with pytest.raises(WarehouseError, match="2 `\\?` placeholder"):
        translate("SELECT ?, ?", 1)


@pytest.mark.parametrize("sql", ["SELECT 'open ?", 'SELECT "open', "SELECT /* open", "SELECT $x$ open"])
def test_unterminated_literals_are_refused(sql):
    with pytest.raises(WarehouseError, match="unterminated"):
        to_pyformat(sql)
