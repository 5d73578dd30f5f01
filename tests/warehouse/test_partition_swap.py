"""PostgreSQL focus_costs partitioned per (source, month): the migration keeps every row, a load
swaps a fresh partition in, and a load that dies or fails leaves the old partition whole."""

from __future__ import annotations

import subprocess
import sys
import time
from decimal import Decimal

import psycopg
import pyarrow.parquet as pq
import pytest

from finops.warehouse.base import DataRefused, LoadLogEntry
from finops.warehouse.postgres_wh import PostgresWarehouse, _split_units
from tests.fixtures.focus_rows import focus_row, focus_table, write_focus

PART = {"x_source": "a", "x_billing_period": "2024-01"}
WIDE = [
    Decimal("9999999999999999999999999999.9999999999"),
    Decimal("-9999999999999999999999999999.9999999999"),
    Decimal("0.0000000001"),
    Decimal("-0.0000000001"),
    Decimal("12345678901234567890.0123456789"),
    Decimal("0"),
]


def _stage_tables(wh) -> list[str]:
    rows = wh.query(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relname LIKE 'focus\\_costs\\_s\\_%' AND relkind = 'r'"
    )
    return [r[0] for r in rows]


def _partition_rows(wh, part=PART) -> list[tuple]:
    return wh.query(
        "SELECT resource_id, billed_cost, pricing_quantity, x_load_id FROM focus_costs "
        "WHERE x_source = ? AND x_billing_period = ? ORDER BY resource_id",
        [part["x_source"], part["x_billing_period"]],
    )


def _rows(n: int, tag: str, part=PART) -> list[dict]:
    return [
        focus_row(
            part["x_source"],
            part["x_billing_period"],
            i,
            billed_cost=WIDE[i % len(WIDE)],
            pricing_quantity=Decimal(f"{i}.{i:012d}"),
            x_load_id=tag,
        )
        for i in range(n)
    ]


def _expected(rows: list[dict]) -> list[tuple]:
    return sorted((r["resource_id"], r["billed_cost"], r["pricing_quantity"], r["x_load_id"]) for r in rows)


pytestmark = pytest.mark.postgres


def test_split_units_gives_contiguous_shares_of_about_equal_rows():
    units = [(0, 0, 100), (0, 1, 100), (1, 0, 50), (1, 1, 50), (1, 2, 100)]
    assert _split_units(units, 2) == [[(0, [0, 1])], [(1, [0, 1, 2])]]
    assert _split_units(units, 3) == [[(0, [0, 1])], [(1, [0, 1])], [(1, [2])]]
    assert _split_units(units[:1], 4) == [[(0, [0])]]  # never more shares than row groups
    assert _split_units([], 2) == []


def test_swap_keeps_exact_decimals_over_several_connections(pg_dsn, pg_schema, tmp_path):
    wh = PostgresWarehouse.from_dsn(pg_dsn, schema=pg_schema, copy_connections=3)
    try:
        wh.migrate()
        first = _rows(40, "v1")
        assert wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "v1.parquet", first)]) == 40
        # A restatement in two files of many row groups, split over three connections.
        second = _rows(90, "v2")
        f1, f2 = tmp_path / "v2a.parquet", tmp_path / "v2b.parquet"
        pq.write_table(focus_table(second[:50]), f1, row_group_size=7)
        pq.write_table(focus_table(second[50:]), f2, row_group_size=11)
        entry = LoadLogEntry("v2", "a", "aws", "2024-01", "loaded", files=[f1.name, f2.name])
        assert wh.replace_partition("focus_costs", PART, [f1, f2], entry) == 90
        assert [tuple(r) for r in _partition_rows(wh)] == _expected(second)
        assert wh.query("SELECT row_count FROM load_log WHERE load_id = 'v2'") == [(90,)]
        # One partition for the key (the old one dropped), its indexes those of the parent.
        parts = wh.query(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'focus_costs'::regclass ORDER BY 1"
        )
        assert [p[1] for p in parts] == ["DEFAULT", "FOR VALUES IN ('a\x1f2024-01')"]
        attached = wh.query(
            "SELECT count(*) FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid "
            "WHERE x.indrelid = to_regclass(?) AND i.inhparent IN "
            "(SELECT indexrelid FROM pg_index WHERE indrelid = 'focus_costs'::regclass)",
            [parts[1][0]],
        )
        assert attached == [(2,)]
        assert _stage_tables(wh) == []
    finally:
        wh.close()


def test_rows_of_another_partition_are_refused_and_old_data_kept(pg_wh, tmp_path):
    old = _rows(5, "old")
    pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "old.parquet", old)])
    stray = [*_rows(3, "new"), focus_row("b", "2024-01", 9, x_load_id="new")]
    with pytest.raises(DataRefused, match="bound"):
        pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "stray.parquet", stray)])
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(old)
    assert _stage_tables(pg_wh) == []


def test_rows_inserted_directly_are_replaced_by_the_load(pg_wh, tmp_path):
    """Rows INSERTed outside a load land in the DEFAULT partition; loading their key takes over."""
    row = focus_row("a", "2024-01", 99, x_load_id="manual")
    cols = list(row)
    pg_wh.execute(
        f"INSERT INTO focus_costs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [row[c] for c in cols],
    )
    assert pg_wh.query("SELECT count(*) FROM focus_costs_default") == [(1,)]
    rows = _rows(4, "load")
    assert pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "l.parquet", rows)]) == 4
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(rows)
    assert pg_wh.query("SELECT count(*) FROM focus_costs_default") == [(0,)]


_LOADER = """
import sys
from pathlib import Path
from finops.warehouse.postgres_wh import PostgresWarehouse
wh = PostgresWarehouse.from_dsn(sys.argv[1], schema=sys.argv[2], copy_connections=2, application_name=sys.argv[4])
wh.replace_partition("focus_costs", {"x_source": "a", "x_billing_period": "2024-01"}, [Path(sys.argv[3])])
"""


def _wait(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_load_killed_between_copy_and_attach_keeps_old_partition(pg_dsn, pg_wh, tmp_path):
    old = _rows(6, "old")
    pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "old.parquet", old)])
    new_file = tmp_path / "new.parquet"
    pq.write_table(focus_table(_rows(200, "killed")), new_file, row_group_size=50)
    app = f"finops-kill-{pg_wh.schema}"
    with psycopg.connect(pg_dsn, autocommit=False) as blocker:
        # A reader holding SHARE on focus_costs: the swap's DETACH / ATTACH waits behind it,
        # after the staging table is filled and indexed.
        blocker.execute(f'LOCK TABLE "{pg_wh.schema}".focus_costs IN SHARE MODE')
        proc = subprocess.Popen(
            [sys.executable, "-c", _LOADER, pg_dsn, pg_wh.schema, str(new_file), app],
            cwd=str(tmp_path),
            env=_env(),
        )
        try:
            _wait(
                lambda: (
                    pg_wh.query(
                        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                        "WHERE NOT l.granted AND a.application_name = ?",
                        [app],
                    )[0][0]
                    > 0
                    or proc.poll() is not None
                ),
                "the load to wait for its swap",
            )
            assert proc.poll() is None, "the loader ended before reaching its swap"
            staged = _stage_tables(pg_wh)
            assert len(staged) == 1
            assert pg_wh.query(f'SELECT count(*) FROM "{staged[0]}"') == [(200,)]  # COPY done
            proc.kill()
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
        blocker.rollback()
    _wait(
        lambda: (
            pg_wh.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", [app]) == [(0,)]
        ),
        "the killed load's server sessions to end",
    )
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(old)
    assert len(_stage_tables(pg_wh)) == 1  # the crash's leftover
    new = _rows(8, "next")
    assert pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "next.parquet", new)]) == 8
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(new)
    assert _stage_tables(pg_wh) == []


def _env() -> dict[str, str]:
    import os
    from pathlib import Path

    import finops

    env = dict(os.environ)
    plugins = str(Path(finops.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (plugins, env.get("PYTHONPATH", "")) if p)
    return env


def test_migration_moves_existing_rows_and_keeps_indexes(pg_wh, tmp_path):
    from finops.warehouse.migrations.m0001_core import statements

    # focus_costs as it was before migration 5, with rows and an index added by someone else.
    pg_wh.execute("DROP TABLE focus_costs")
    for stmt in statements("postgres")[:3]:
        pg_wh.execute(stmt)
    pg_wh.execute("CREATE INDEX focus_costs_by_resource ON focus_costs (resource_id)")
    a, b = _rows(7, "a"), _rows(5, "b", {"x_source": "b", "x_billing_period": "2024-02"})
    pg_wh.insert_arrow("focus_costs", focus_table(a + b))
    pg_wh.execute("DELETE FROM schema_migrations WHERE version = 5")
    assert pg_wh.migrate() == [5]
    assert pg_wh.query("SELECT relkind FROM pg_class WHERE oid = 'focus_costs'::regclass") == [("p",)]
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(a)
    assert [
        tuple(r) for r in _partition_rows(pg_wh, {"x_source": "b", "x_billing_period": "2024-02"})
    ] == _expected(b)
    assert pg_wh.query("SELECT count(*) FROM focus_costs_default") == [(0,)]
    names = {
        r[0]
        for r in pg_wh.query(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'focus_costs'::regclass"
        )
    }
    assert names == {"focus_costs_partition", "focus_costs_charge_day", "focus_costs_by_resource"}
    assert not pg_wh.table_exists("focus_costs_unpartitioned")
    # A load after the migration builds all three indexes on its new partition.
    assert (
        pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "n.parquet", _rows(3, "n"))])
        == 3
    )
    assert pg_wh.query(
        "SELECT count(*) FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indrelid "
        "WHERE i.inhparent = 'focus_costs'::regclass AND x.indrelid <> 'focus_costs_default'::regclass"
    ) == [(6,)]  # two partitions (a and b), three indexes each


def test_swap_gives_way_to_a_reader_then_retries(pg_dsn, pg_wh, tmp_path, monkeypatch, caplog):
    """DETACH waits for an exclusive lock, and readers would queue behind it: the swap gives up
    after its lock timeout, lets them through, and tries again."""
    import logging
    import threading

    import finops.warehouse.postgres_wh as pg_mod

    monkeypatch.setattr(pg_mod, "SWAP_LOCK_TIMEOUT", "100ms")
    pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "old.parquet", _rows(3, "old"))])
    reader = psycopg.connect(pg_dsn, autocommit=False)
    reader.execute(f'SELECT count(*) FROM "{pg_wh.schema}".focus_costs')  # holds ACCESS SHARE until it ends
    release = threading.Timer(1.5, reader.rollback)
    release.start()
    try:
        new = _rows(4, "new")
        with caplog.at_level(logging.INFO, logger=pg_mod.__name__):
            assert (
                pg_wh.replace_partition("focus_costs", PART, [write_focus(tmp_path / "new.parquet", new)])
                == 4
            )
    finally:
        release.join()
        reader.close()
    assert any("swap retried" in r.getMessage() for r in caplog.records)
    assert [tuple(r) for r in _partition_rows(pg_wh)] == _expected(new)
    assert _stage_tables(pg_wh) == []
