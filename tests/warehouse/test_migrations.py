"""Migrations on both engines: ordered, idempotent, one transaction each, safe when concurrent."""

from __future__ import annotations

import threading

import pytest

from finops.warehouse.migrations import Migration, all_migrations

ALL = [m.version for m in all_migrations()]


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_wh(request, tmp_path):
    """An UN-migrated warehouse of each backend."""
    if request.param == "duckdb":
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        wh = DuckDBWarehouse(tmp_path / "wh.duckdb")
    else:
        from finops.warehouse.postgres_wh import PostgresWarehouse

        wh = PostgresWarehouse.from_dsn(
            request.getfixturevalue("pg_dsn"), schema=request.getfixturevalue("pg_schema")
        )
    yield wh
    wh.close()


def test_migrate_applies_all_in_order_then_nothing(fresh_wh):
    assert ALL == sorted(ALL) and ALL[0] == 1
    assert fresh_wh.migrate() == ALL
    assert fresh_wh.migrate() == []
    recorded = [r[0] for r in fresh_wh.query("SELECT version FROM schema_migrations ORDER BY version")]
    assert recorded == ALL
    for table in ("focus_costs", "load_log", "schema_migrations"):
        assert fresh_wh.table_exists(table)
    assert not fresh_wh.table_exists("no_such_table")


def test_failing_migration_rolls_back_alone(fresh_wh, monkeypatch):
    import finops.warehouse.duckdb_wh as dmod
    import finops.warehouse.postgres_wh as pmod

    broken = Migration(
        9999,
        "broken on purpose",
        lambda dialect: ["CREATE TABLE half_done (x INTEGER)", "CREATE TABLE syntax error here"],
    )
    for mod in (dmod, pmod):
        monkeypatch.setattr(mod, "all_migrations", lambda: [*all_migrations(), broken])
    with pytest.raises(Exception, match="(?i)syntax"):
        fresh_wh.migrate()
    # Everything before the broken one is applied and recorded; the broken one left no trace.
    assert [r[0] for r in fresh_wh.query("SELECT version FROM schema_migrations ORDER BY version")] == ALL
    assert not fresh_wh.table_exists("half_done")
    monkeypatch.undo()
    assert fresh_wh.migrate() == []


@pytest.mark.postgres
def test_concurrent_postgres_migrations_do_not_collide(pg_dsn, pg_schema):
    from finops.warehouse.postgres_wh import PostgresWarehouse

    results: list[list[int]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def worker() -> None:
        try:
            barrier.wait()  # the schema does not exist yet: creating it races too
            wh = PostgresWarehouse.from_dsn(pg_dsn, schema=pg_schema)
            barrier.wait()
            results.append(wh.migrate())
            wh.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    applied = sorted(v for r in results for v in r)
    assert applied == ALL  # each migration applied exactly once in total
