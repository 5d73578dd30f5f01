"""`finops` console script: `finops export focus ...`, `finops demo`, `finops migrate [--sql]`,
`finops --version`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from finops.exceptions import FinopsError

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse


class CliError(FinopsError):
    """A problem the user can fix, printed as `finops: error: ...` (exit status 2)."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _duckdb_path() -> Path:
    """paths.warehouse_path() without its side effect: finops_home() creates FINOPS_HOME, so a
    mistyped FINOPS_HOME (or none, in the wrong folder) used to leave an empty folder behind."""
    return Path(os.environ.get("FINOPS_HOME", "./.finops")).expanduser().resolve() / "warehouse.duckdb"


def _warehouse_name(conn_id: str | None, schema: str) -> str:
    return (
        f"PostgreSQL warehouse (connection {conn_id!r}, schema {schema!r})"
        if conn_id
        else str(_duckdb_path())
    )


def _pg_schema_exists(conn_id: str, schema: str) -> bool:
    """Asked on a connection of its own: opening a PostgresWarehouse creates a missing schema
    (right for a loader), so a mistyped warehouse.schema used to leave an empty schema behind."""
    from contextlib import closing

    from airflow.providers.postgres.hooks.postgres import PostgresHook

    with closing(PostgresHook(postgres_conn_id=conn_id).get_conn()) as conn:
        cur = conn.cursor()
        cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema])
        return cur.fetchone() is not None


def _open_for_export() -> tuple[Warehouse, str]:
    """The configured warehouse, opened only if it exists: `export` used to create (and
    migrate) an empty DuckDB file wherever FINOPS_HOME pointed, then write an empty file."""
    from finops.config import config_path, get_config
    from finops.warehouse import connect

    cfg = get_config()
    conn_id, schema = cfg.warehouse.conn_id, cfg.warehouse.schema_
    name = _warehouse_name(conn_id, schema)
    if not conn_id and not _duckdb_path().exists():
        raise CliError(
            f"no warehouse at {name}: set FINOPS_HOME to the folder holding warehouse.duckdb "
            f"(or warehouse.conn_id in {config_path()}); `finops demo` or a billing DAG creates one"
        )
    if conn_id and not _pg_schema_exists(conn_id, schema):
        raise CliError(
            f"no warehouse at {name}: schema {schema!r} does not exist "
            f"(check warehouse.schema in {config_path()})"
        )
    if conn_id:
        wh = connect(cfg, migrate=False)  # a read: never create tables in someone's schema
    else:  # read-only: works in a read-only FINOPS_HOME, beside other readers, and writes nothing there
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        wh = DuckDBWarehouse(_duckdb_path(), read_only=True)
    if not wh.table_exists("focus_costs"):
        wh.close()
        raise CliError(
            f"{name} has no focus_costs table: nothing loaded yet (run a billing DAG or `finops migrate`)"
        )
    return wh, name


def _export(args: argparse.Namespace) -> int:
    from finops.export import NothingToExport, check_out, export_focus
    from finops.periods import check_period

    check_period(args.period)  # before opening anything: a typo costs no warehouse
    check_out(args.out)
    wh, name = _open_for_export()
    try:
        n = export_focus(wh, args.period, args.out, source=args.source, allow_empty=False)
    except NothingToExport as e:
        print(f"finops: error: {e} (warehouse: {name})", file=sys.stderr)
        return 1
    finally:
        wh.close()
    print(f"wrote {n} FOCUS {args.period} rows to {args.out}")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    if args.sql:  # print, connect to nothing
        from finops.cli.migrate_sql import migration_script

        schema = args.schema
        if schema is None:
            from finops.config import get_config

            schema = get_config().warehouse.schema_
        print(migration_script(args.dialect, schema, args.since))
        return 0
    from finops.warehouse import connect

    wh = connect(migrate=False)
    try:
        applied = wh.migrate()
    finally:
        wh.close()
    print(f"applied migrations: {applied or 'none (up to date)'}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from finops.demo.run import run_demo

    return run_demo(months=args.months, rows_per_month=args.rows)


def _version() -> str:
    """The installed distribution's version (what pip and the image report), else the package's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("airflow-finops")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from finops import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="finops", description="airflow-finops command line")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True)

    exp = sub.add_parser("export", help="export warehouse data")
    exp_sub = exp.add_subparsers(dest="what", required=True)
    f = exp_sub.add_parser("focus", help="FOCUS 1.2 rows with the spec's column names")
    f.add_argument("--period", required=True, help="billing period YYYY-MM")
    f.add_argument("--out", required=True, help="FILE.parquet or FILE.csv")
    f.add_argument("--source", default=None, help="only this configured source (default: all)")
    f.set_defaults(func=_export)

    m = sub.add_parser("migrate", help="apply warehouse migrations")
    m.add_argument(
        "--sql",
        action="store_true",
        help="print the DDL script for a DBA to review and apply, instead of applying it",
    )
    m.add_argument(
        "--dialect", choices=("postgres", "duckdb"), default="postgres", help="with --sql (default postgres)"
    )
    m.add_argument("--schema", default=None, help="with --sql: PostgreSQL schema (default: warehouse.schema)")
    m.add_argument(
        "--since",
        type=int,
        default=0,
        metavar="VERSION",
        help="with --sql: only migrations newer than this (SELECT max(version) FROM schema_migrations)",
    )
    m.set_defaults(func=_migrate)

    d = sub.add_parser("demo", help="run the end-to-end demo on bundled data and local emulators")
    d.add_argument(
        "--months", type=_positive_int, default=3, help="closed months before this one (default 3)"
    )
    d.add_argument("--rows", type=_positive_int, default=20_000, help="CUR rows per month (default 20000)")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(message)s"
    )
    try:
        return args.func(args)
    except BrokenPipeError:  # `finops migrate --sql | head`: the reader stopped, nothing failed
        # Python's documented remedy: point stdout at devnull so the exit-time flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 - a CLI prints the reason, not a traceback
        if args.verbose:
            raise
        print(f"finops: error: {e}", file=sys.stderr)
        return 2


def entrypoint() -> None:
    """Console-script entry: exit without interpreter finalisation, where duckdb 2.0's nanobind
    bindings print pages of harmless 'leaked instance' reports."""
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    entrypoint()
