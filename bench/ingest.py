"""Ingest benchmark: one generated CUR 2.0 month through the real spine, side by side with
(a) a DuckDB scan-only baseline over the same file (read every column, sum / measure it) and
(b) a straightforward pandas implementation of the same mapping.

Each measurement runs in its own fresh process, so peak RSS is per stage, not cumulative.

    .venv/bin/python bench/ingest.py              # 2M rows
    .venv/bin/python bench/ingest.py --rows 10000000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _scan(path: str, q: mp.Queue) -> None:
    import duckdb

    con = duckdb.connect()
    cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    parts = []
    for name, typ, *_ in cols:
        ident = '"' + name + '"'
        if typ.startswith("MAP"):
            parts.append(f"sum(cardinality({ident}))")
        elif typ in ("DOUBLE", "BIGINT", "INTEGER") or typ.startswith("DECIMAL"):
            parts.append(f"sum({ident})")
        elif typ.startswith("TIMESTAMP"):
            parts.append(f"max({ident})")
        else:
            parts.append(f"sum(length({ident}))")
    t = time.perf_counter()
    con.execute(f"SELECT count(*), {', '.join(parts)} FROM read_parquet('{path}')").fetchall()
    q.put({"seconds": time.perf_counter() - t, "rss_mb": _rss_mb()})


def _spine(path: str, home: str, q: mp.Queue) -> None:
    os.environ["FINOPS_HOME"] = home
    import finops.quality.validate  # noqa: F401 - import GX before timing: it is a one-off per process
    from finops.focus.aws_cur import Cur2Converter
    from finops.ingest import ConvertContext, RawBatch, convert_to_staging, make_load_id
    from finops.paths import subdir, warehouse_path
    from finops.quality import validate_staging
    from finops.warehouse.base import LoadLogEntry
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    batch = RawBatch("bench", "aws", PERIOD, [Path(path)], "bench")
    load_id = make_load_id("bench", PERIOD, "bench")
    staging = subdir("staging") / "bench.parquet"
    wh = DuckDBWarehouse(warehouse_path())
    wh.migrate()
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    res = convert_to_staging(batch, Cur2Converter(), ConvertContext("bench", "aws", PERIOD, load_id), staging)
    t1 = time.perf_counter()
    rss1 = _rss_mb()
    rep = validate_staging([staging], source="bench", billing_period=PERIOD, raw_billed_total=res.raw_billed_total)
    t2 = time.perf_counter()
    rss2 = _rss_mb()
    entry = LoadLogEntry(load_id, "bench", "aws", PERIOD, "loaded")
    n = wh.replace_partition("focus_costs", {"x_source": "bench", "x_billing_period": PERIOD}, [staging], log=entry)
    t3 = time.perf_counter()
    wh.close()
    q.put({
        "convert_s": t1 - t0, "validate_s": t2 - t1, "load_s": t3 - t2, "seconds": t3 - t0, "rows": n,
        "valid": rep.success, "failures": rep.failures[:3], "billed": str(res.focus_billed_total),
        "raw": str(res.raw_billed_total), "rss_mb": _rss_mb(),
        "rss_before": rss0, "rss_after_convert": rss1, "rss_after_validate": rss2,
    })


def _pandas(path: str, out: str, q: mp.Queue) -> None:
    """The obvious pandas version of the same mapping (floats, row-wise-ish numpy)."""
    import json

    import numpy as np
    import pandas as pd

    t = time.perf_counter()
    df = pd.read_parquet(path)
    lit = df["line_item_line_item_type"]
    unb = df["line_item_unblended_cost"]
    out_df = pd.DataFrame({
        "billed_cost": unb,
        "billing_account_id": df["bill_payer_account_id"],
        "billing_currency": df["line_item_currency_code"],
        "billing_period_start": df["bill_billing_period_start_date"],
        "charge_period_start": df["line_item_usage_start_date"],
        "charge_period_end": df["line_item_usage_end_date"],
        "sub_account_id": df["line_item_usage_account_id"],
        "resource_id": df["line_item_resource_id"].replace("", None),
        "region_id": df["product_region_code"],
    })
    out_df["charge_category"] = np.select(
        [lit == "Tax", lit == "Credit", lit == "Refund",
         lit.isin(["Fee", "RIFee", "SavingsPlanUpfrontFee", "SavingsPlanRecurringFee"])],
        ["Tax", "Credit", "Adjustment", "Purchase"], "Usage")
    out_df["effective_cost"] = np.select(
        [lit == "SavingsPlanCoveredUsage", lit.isin(["SavingsPlanNegation", "SavingsPlanUpfrontFee"]),
         lit == "SavingsPlanRecurringFee", lit == "DiscountedUsage", lit == "RIFee",
         (lit == "Fee") & (df["reservation_reservation_a_r_n"] != "")],
        [df["savings_plan_savings_plan_effective_cost"], 0,
         df["savings_plan_total_commitment_to_date"] - df["savings_plan_used_commitment"],
         df["reservation_effective_cost"],
         df["reservation_unused_amortized_upfront_fee_for_billing_period"] + df["reservation_unused_recurring_fee"], 0],
        unb)
    out_df["list_cost"] = np.where(lit == "SavingsPlanNegation", 0, df["pricing_public_on_demand_cost"].fillna(unb))
    spot = df["line_item_usage_type"].str.contains("SpotUsage", regex=False)
    out_df["pricing_category"] = np.select(
        [lit.isin(["Tax", "Credit", "Refund"]), lit.isin(["DiscountedUsage", "SavingsPlanCoveredUsage"]), spot],
        [None, "Committed", "Dynamic"], "Standard")
    out_df["tags"] = [json.dumps(dict(t)) if t is not None and len(t) else None for t in df["resource_tags"]]
    out_df.to_parquet(out)
    q.put({"seconds": time.perf_counter() - t, "rss_mb": _rss_mb(), "billed": float(out_df["billed_cost"].sum())})


PERIOD = "2025-01"


def _run(target, *args) -> dict:
    q: mp.Queue = mp.Queue()
    p = mp.get_context("fork").Process(target=target, args=(*args, q))
    p.start()
    res = q.get()
    p.join()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--skip-pandas", action="store_true")
    ap.add_argument("--data-dir", default=None,
                    help="keep the generated month here and reuse it on later runs with the same --rows")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

    work = Path(args.workdir or tempfile.mkdtemp(prefix="finops-bench-"))
    path, rows, billed = _generated(Path(args.data_dir) if args.data_dir else work / "export", args.rows)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    scan = _run(_scan, path)
    spine = _run(_spine, path, str(work / "home"))
    print(f"{'path':<34}{'seconds':>9}{'rows/s':>14}{'peak RSS MB':>13}")
    print(f"{'DuckDB scan-only baseline':<34}{scan['seconds']:>9.2f}{rows / scan['seconds']:>14,.0f}{scan['rss_mb']:>13.0f}")
    print(f"{'spine: convert (CUR -> FOCUS)':<34}{spine['convert_s']:>9.2f}{rows / spine['convert_s']:>14,.0f}"
          f"{spine['rss_after_convert']:>13.0f}")
    print(f"{'spine: validate (GX + money)':<34}{spine['validate_s']:>9.2f}{rows / spine['validate_s']:>14,.0f}"
          f"{spine['rss_after_validate']:>13.0f}")
    print(f"{'spine: load (replace partition)':<34}{spine['load_s']:>9.2f}{rows / spine['load_s']:>14,.0f}"
          f"{spine['rss_mb']:>13.0f}")
    print(f"(peak RSS column for spine stages is the process maximum so far; {spine['rss_before']:.0f} MB "
          "before converting, imports incl. GX)")
    print(f"{'spine: total':<34}{spine['seconds']:>9.2f}{rows / spine['seconds']:>14,.0f}{spine['rss_mb']:>13.0f}")
    if not args.skip_pandas:
        pdr = _run(_pandas, path, str(work / "pandas.parquet"))
        print(f"{'pandas (read + map + write)':<34}{pdr['seconds']:>9.2f}{rows / pdr['seconds']:>14,.0f}{pdr['rss_mb']:>13.0f}")
        print(f"spine convert vs pandas: {pdr['seconds'] / spine['convert_s']:.1f}x; "
              f"spine total vs pandas: {pdr['seconds'] / spine['seconds']:.1f}x")
    print(f"spine convert vs scan baseline: {scan['seconds'] / spine['convert_s'] * 100:.0f}% of its rows/s; "
          f"total: {scan['seconds'] / spine['seconds'] * 100:.0f}%")
    ok = spine["billed"] == spine["raw"] == str(billed.quantize(spine_q(spine["billed"])))
    print(f"reconciled: {spine['billed']} (raw {spine['raw']}), valid={spine['valid']} {spine['failures']}, ok={ok}")


def _generated(root: Path, rows: int) -> tuple[str, int, Decimal]:
    """(data file, exact row count, exact billed total), generating only when not cached in root."""
    import json

    from finops.demo.cur_generator import GenSpec, write_cur2_period

    meta = root / f"bench-{rows}.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        if Path(m["path"]).exists():
            print(f"reusing {m['rows']:,} generated rows from {m['path']}")
            return m["path"], m["rows"], Decimal(m["billed"])
    t = time.perf_counter()
    d = write_cur2_period(root / f"rows-{rows}", GenSpec(PERIOD, rows=rows, seed=1))
    path = str(root / f"rows-{rows}" / d.data_keys[0])
    size = Path(path).stat().st_size / 2**20
    print(f"generated {d.totals.rows:,} rows ({size:.0f} MiB parquet) in {time.perf_counter() - t:.1f}s; "
          f"expected billed {d.totals.billed_total}")
    meta.write_text(json.dumps({"path": path, "rows": d.totals.rows, "billed": str(d.totals.billed_total)}))
    return path, d.totals.rows, d.totals.billed_total


def spine_q(s: str) -> Decimal:
    return Decimal(1).scaleb(-len(s.split(".")[1])) if "." in s else Decimal(1)


if __name__ == "__main__":
    main()
