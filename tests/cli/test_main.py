"""The `finops` command as a new user meets it: every documented command works as written, and
every mistake (bad period, no warehouse, unwritable --out, unknown command) ends with a non-zero
status and one line naming the problem, never a traceback or a file that looks like a result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from finops.cli.main import main
from tests.fixtures.focus_rows import focus_row, write_focus

REPO = Path(__file__).resolve().parents[2]


def _load(wh, tmp_path: Path, source: str, period: str, n: int) -> None:
    rows = [focus_row(source, period, i) for i in range(n)]
    wh.replace_partition(
        "focus_costs",
        {"x_source": source, "x_billing_period": period},
        [write_focus(tmp_path / f"in-{source}-{period}.parquet", rows)],
    )


@pytest.fixture
def loaded_home(duckdb_wh, finops_home, tmp_path) -> Path:
    """FINOPS_HOME with a DuckDB warehouse holding 2024-04 (source a) and 2024-05 (sources a, b)."""
    _load(duckdb_wh, tmp_path, "a", "2024-04", 2)
    _load(duckdb_wh, tmp_path, "a", "2024-05", 3)
    _load(duckdb_wh, tmp_path, "b", "2024-05", 4)
    duckdb_wh.close()  # the CLI opens the file itself, as it would from a shell
    return finops_home


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_focus_writes_the_period(loaded_home, tmp_path, capsys, fmt):
    out = tmp_path / "out" / f"focus.{fmt}"
    rc, stdout, err = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(out))
    assert (rc, err) == (0, "")
    assert stdout.strip() == f"wrote 7 FOCUS 2024-05 rows to {out}"
    if fmt == "parquet":
        assert pq.read_table(out).num_rows == 7
    assert not [p for p in out.parent.iterdir() if p.name != out.name], "temporary file left behind"


def test_export_focus_one_source(loaded_home, tmp_path, capsys):
    out = tmp_path / "b.parquet"
    rc, stdout, _ = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(out), "--source", "b")
    assert rc == 0 and "wrote 4 FOCUS 2024-05 rows" in stdout
    assert set(pq.read_table(out).column("x_source").to_pylist()) == {"b"}


def test_bad_period_fails_before_opening_the_warehouse(finops_home, tmp_path, capsys):
    """A typo in --period used to create and migrate an empty warehouse.duckdb first."""
    rc, _, err = _run(capsys, "export", "focus", "--period", "2024-13", "--out", str(tmp_path / "x.parquet"))
    assert rc == 2
    assert err.startswith("finops: error: ") and "YYYY-MM" in err and "'2024-13'" in err
    assert not (finops_home / "warehouse.duckdb").exists()
    assert not (tmp_path / "x.parquet").exists()


def test_missing_warehouse_is_named_and_not_created(finops_home, tmp_path, capsys):
    """No warehouse used to mean: a new empty one created, an empty parquet written, 'wrote 0 ...'
    on stdout and status 1, with nothing saying that FINOPS_HOME was the wrong folder."""
    out = tmp_path / "x.parquet"
    rc, stdout, err = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(out))
    assert rc == 2 and stdout == ""
    assert f"no warehouse at {finops_home / 'warehouse.duckdb'}" in err and "FINOPS_HOME" in err
    assert not (finops_home / "warehouse.duckdb").exists()
    assert not out.exists()


def test_mistyped_finops_home_is_not_created(tmp_path, monkeypatch, capsys):
    """The check itself created FINOPS_HOME (paths.finops_home() makes it on demand), so running
    the demo's printed export command from the wrong folder left an empty .finops/ there."""
    from finops.paths import warehouse_path

    home = tmp_path / "typo" / "home"
    monkeypatch.setenv("FINOPS_HOME", str(home))
    rc, _, err = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(tmp_path / "x.parquet"))
    assert rc == 2 and f"no warehouse at {home / 'warehouse.duckdb'}" in err
    assert not (tmp_path / "typo").exists()
    assert str(warehouse_path()) in err  # the same path the package itself would use


def test_period_not_loaded_names_the_loaded_ones(loaded_home, tmp_path, capsys):
    out = tmp_path / "x.parquet"
    rc, stdout, err = _run(capsys, "export", "focus", "--period", "2024-06", "--out", str(out))
    assert rc == 1 and stdout == ""
    assert "no FOCUS rows for 2024-06" in err and "2024-04, 2024-05" in err
    assert str(loaded_home / "warehouse.duckdb") in err
    assert not out.exists(), "an empty file reads like a successful export of a quiet month"


def test_unknown_source_names_the_sources_of_the_period(loaded_home, tmp_path, capsys):
    rc, _, err = _run(
        capsys,
        "export",
        "focus",
        "--period",
        "2024-05",
        "--out",
        str(tmp_path / "x.parquet"),
        "--source",
        "nope",
    )
    assert rc == 1
    assert "source 'nope'" in err and "sources with rows in 2024-05: a, b" in err


@pytest.mark.parametrize("case", ["under_a_file", "a_directory", "wrong_suffix"])
def test_unwritable_out_is_named_before_anything_is_created(loaded_home, tmp_path, capsys, case):
    blocker = tmp_path / "plain-file"
    blocker.write_text("")
    (tmp_path / "somedir.parquet").mkdir()
    out = {
        "under_a_file": blocker / "sub" / "x.parquet",
        "a_directory": tmp_path / "somedir.parquet",
        "wrong_suffix": tmp_path / "new-folder" / "x.json",
    }[case]
    rc, stdout, err = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(out))
    assert rc == 2 and stdout == ""
    assert err.startswith("finops: error: ") and "Traceback" not in err
    assert (out.name if case == "wrong_suffix" else str(out)) in err
    assert not (tmp_path / "new-folder").exists()


def test_empty_postgres_schema_is_reported_not_migrated(pg_conn_id, tmp_path, monkeypatch, capsys):
    """A read must not create the warehouse's tables in a schema it was pointed at by mistake."""
    import psycopg

    with psycopg.connect(pg_conn_id.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_conn_id.schema}"')  # empty; dropped by the fixture
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(f"warehouse:\n  conn_id: {pg_conn_id.conn_id}\n  schema: {pg_conn_id.schema}\n")
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    rc, _, err = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(tmp_path / "x.parquet"))
    assert rc == 2
    assert "has no focus_costs table" in err and pg_conn_id.schema in err
    with psycopg.connect(pg_conn_id.dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", [pg_conn_id.schema]
        ).fetchone() == (0,)


def test_export_from_postgres(pg_conn_id, tmp_path, monkeypatch, capsys):
    from finops.warehouse.postgres_wh import PostgresWarehouse

    with PostgresWarehouse.from_dsn(pg_conn_id.dsn, schema=pg_conn_id.schema) as wh:
        wh.migrate()
        _load(wh, tmp_path, "pg", "2024-05", 3)
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(f"warehouse:\n  conn_id: {pg_conn_id.conn_id}\n  schema: {pg_conn_id.schema}\n")
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    out = tmp_path / "pg.csv"
    rc, stdout, _ = _run(capsys, "export", "focus", "--period", "2024-05", "--out", str(out))
    assert rc == 0 and "wrote 3 FOCUS 2024-05 rows" in stdout
    assert len(out.read_text().splitlines()) == 4


@pytest.mark.parametrize(
    "argv",
    [
        ["bogus"],
        [],
        ["export"],
        ["export", "focus", "--period", "2024-05"],
        ["demo", "--months", "0"],
        ["demo", "--rows", "-5"],
        ["demo", "--months", "x"],
    ],
)
def test_usage_errors_exit_2_with_usage(argv, capsys):
    """`demo --months 0` / `--rows -5` used to start the demo (Airflow DB, emulators) before anything noticed."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: finops" in err and "error:" in err


def test_documented_help_commands(capsys):
    for argv in (
        ["--help"],
        ["export", "--help"],
        ["export", "focus", "--help"],
        ["demo", "--help"],
        ["migrate", "--help"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0, argv
    assert "--period" in capsys.readouterr().out


def test_console_script_error_has_no_traceback(finops_home, tmp_path):
    """Through the real entry point (os._exit after flushing): status and one error line."""
    env = dict(os.environ, FINOPS_HOME=str(finops_home))
    code = "import sys; from finops.cli.main import entrypoint; sys.argv[0] = 'finops'; entrypoint()"
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "export",
            "focus",
            "--period",
            "2024-05",
            "--out",
            str(tmp_path / "x.parquet"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "finops: error: no warehouse at" in p.stderr


def test_missing_postgres_schema_is_named_and_not_created(pg_conn_id, tmp_path, monkeypatch, capsys):
    """A mistyped warehouse.schema: opening the warehouse created it (CREATE SCHEMA), so the
    read-only export left an empty schema in the database while reporting 'no focus_costs'."""
    import psycopg

    cfg = tmp_path / "finops.yaml"
    cfg.write_text(f"warehouse:\n  conn_id: {pg_conn_id.conn_id}\n  schema: {pg_conn_id.schema}\n")
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    rc, stdout, err = _run(
        capsys, "export", "focus", "--period", "2024-05", "--out", str(tmp_path / "x.parquet")
    )
    with psycopg.connect(pg_conn_id.dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", [pg_conn_id.schema]
        ).fetchone() == (0,), "the export created the schema"
    assert rc == 2 and stdout == ""
    assert f"schema {pg_conn_id.schema!r} does not exist" in err
    assert not (tmp_path / "x.parquet").exists()
