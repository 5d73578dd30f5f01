"""`finops` console script: `finops export focus ...`, `finops demo`, `finops migrate`."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def _export(args: argparse.Namespace) -> int:
    from finops.export import export_focus
    from finops.warehouse import connect

    wh = connect()
    try:
        n = export_focus(wh, args.period, args.out, source=args.source)
    finally:
        wh.close()
    print(f"wrote {n} FOCUS {args.period} rows to {args.out}")
    return 0 if n else 1


def _migrate(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="finops", description="airflow-finops command line")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    exp = sub.add_parser("export", help="export warehouse data")
    exp_sub = exp.add_subparsers(dest="what", required=True)
    f = exp_sub.add_parser("focus", help="FOCUS 1.2 rows with the spec's column names")
    f.add_argument("--period", required=True, help="billing period YYYY-MM")
    f.add_argument("--out", required=True, help="FILE.parquet or FILE.csv")
    f.add_argument("--source", default=None, help="only this configured source")
    f.set_defaults(func=_export)

    m = sub.add_parser("migrate", help="apply warehouse migrations")
    m.set_defaults(func=_migrate)

    d = sub.add_parser("demo", help="run the end-to-end demo on bundled data and local emulators")
    d.add_argument("--months", type=int, default=3)
    d.add_argument("--rows", type=int, default=20_000, help="CUR rows per month")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(message)s")
    try:
        return args.func(args)
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
