"""`finops migrate --sql` and `finops --version`: the printed script, applied by hand on a real
PostgreSQL / DuckDB, builds the same warehouse `migrate()` builds, and `migrate()` then finds
nothing left to apply."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version

import duckdb
import psycopg
import pytest

from finops.cli.main import main
from finops.warehouse.duckdb_wh import DuckDBWarehouse
from finops.warehouse.migrations import all_migrations
from finops.warehouse.postgres_wh import PostgresWarehouse
from tests.fixtures.postgres import _drop_schema, new_schema_name

_COLUMNS = (
    "SELECT table_name, column_name, data_type, is_nullable, numeric_precision, numeric_scale "
    "FROM information_schema.columns WHERE table_schema = %s AND table_name <> 'schema_migrations' "
    "ORDER BY table_name, column_name"
)


def _script(capsys, *argv: str) -> str:
    assert main(["migrate", "--sql", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


@pytest.mark.postgres
def test_postgres_script_builds_what_migrate_builds(pg_dsn, pg_wh, capsys):
    by_hand = new_schema_name("dba")
    script = _script(capsys, "--schema", by_hand)
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(script)  # no parameters: one simple-query round trip, as psql -f would send it
            got = conn.execute(_COLUMNS, [by_hand]).fetchall()
            want = conn.execute(_COLUMNS, [pg_wh.schema]).fetchall()
            recorded = conn.execute(
                f'SELECT version, description FROM "{by_hand}".schema_migrations'
            ).fetchall()
        assert got == want and len(got) > 100
        assert sorted(recorded) == [(m.version, m.description) for m in all_migrations()]
        wh = PostgresWarehouse.from_dsn(pg_dsn, schema=by_hand)
        try:
            assert wh.migrate() == []
        finally:
            wh.close()
    finally:
        _drop_schema(pg_dsn, by_hand)


def test_duckdb_script_builds_what_migrate_builds(tmp_path, capsys):
    script = _script(capsys, "--dialect", "duckdb")
    by_hand = tmp_path / "by_hand.duckdb"
    with duckdb.connect(str(by_hand)) as con:
        con.execute(script)
    with DuckDBWarehouse(tmp_path / "migrated.duckdb") as ref:
        ref.migrate()
    columns = _COLUMNS.replace("table_schema = %s", "table_schema = 'main'")
    shapes = []
    for path in (by_hand, tmp_path / "migrated.duckdb"):
        with duckdb.connect(str(path), read_only=True) as con:
            shapes.append(con.execute(columns).fetchall())
    assert shapes[0] == shapes[1] and len(shapes[0]) > 100
    with DuckDBWarehouse(by_hand) as wh:
        assert wh.migrate() == []


def test_since_prints_only_newer_migrations(capsys):
    versions = [m.version for m in all_migrations()]
    middle = versions[len(versions) // 2]
    script = _script(capsys, "--since", str(middle), "--schema", "finops")
    applied = [
        int(line.split(":")[0][3:])
        for line in script.splitlines()
        if line.startswith("-- ") and line[3:4].isdigit()
    ]
    assert applied == [v for v in versions if v > middle]
    assert script.count("BEGIN;") == len(applied)
    assert _script(capsys, "--since", str(versions[-1]), "--schema", "finops").count("BEGIN;") == 0


def test_bad_schema_is_refused_with_the_reason(capsys):
    assert main(["migrate", "--sql", "--schema", 'x"; DROP TABLE focus_costs; --']) == 2
    out, err = capsys.readouterr()
    assert out == "" and "schema must be a lower-case identifier" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"finops {version('airflow-finops')}"


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """`finops migrate --sql | head`: the reader closing the pipe used to end with
    'finops: error: [Errno 32] Broken pipe' and status 2."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "finops.cli.main", "migrate", "--sql", "--schema", "finops"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "FINOPS_HOME": str(tmp_path)},
    )
    proc.stdout.close()  # before the child has written a byte: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == "", err
