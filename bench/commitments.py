"""Commitments on a year of a large account: coverage and utilisation from focus_costs, and
purchase advice, each against a naive baseline in the same run (ratios printed).

    .venv/bin/python bench/commitments.py [--rows 1000000] [--seed 7]

1. Read path. finops.commitments.query groups the FOCUS Usage rows in SQL (day, account,
   service, instance, commitment, status) and the pure module rolls the groups up; the
   baseline fetches every row and rolls them up in Python. Both must give the same Decimal
   figures (checked), per commitment and per provider / account / family, monthly.
2. Advice. The optimum hourly commitment from prefix sums over the sorted samples against a
   baseline that evaluates the expected cost of every candidate with a full pass (quadratic),
   on a year of daily samples (same answer checked); then the fast path on a year of hourly
   samples alone.

Rows are generated in DuckDB (a year, three clouds, 18 accounts, 24 instance types, 12
commitments with used and unused rows, on-demand and spot usage) into a fresh embedded
warehouse in a temporary directory.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from finops.commitments.advice import Distribution, Offer, Sample, best_commitment  # noqa: E402
from finops.commitments.query import _SQL, _as_date, commitment_lines  # noqa: E402
from finops.commitments.usage import CommitmentLine, coverage, utilisation  # noqa: E402
from finops.warehouse.duckdb_wh import DuckDBWarehouse  # noqa: E402

START = date(2025, 1, 1)
TYPES = {
    "aws": ["g5.2xlarge", "g5.12xlarge", "p4d.24xlarge", "p5.48xlarge", "g6.4xlarge", "m7i.2xlarge", "c7i.4xlarge", "r7i.xlarge"],
    "gcp": ["a2-highgpu-1g", "a2-highgpu-8g", "a3-highgpu-8g", "g2-standard-8", "n2-standard-8", "n2-highmem-4", "c3-standard-8", "e2-standard-4"],
    "azure": ["Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_ND96asr_v4", "Standard_NV36ads_A10_v5",
              "Standard_D4s_v5", "Standard_D8s_v5", "Standard_E8s_v5", "Standard_F8s_v2"],
}  # fmt: skip
SERVICE = {"aws": "Amazon Elastic Compute Cloud", "gcp": "Compute Engine", "azure": "Virtual Machines"}


def generate(wh: DuckDBWarehouse, rows: int, seed: int) -> None:
    """`rows` FOCUS Usage rows over 365 days, spread by a seeded hash of the row number."""
    provs = ["aws", "gcp", "azure"]
    types = ", ".join(f"'{t}'" for p in provs for t in TYPES[p])  # 24: provider = index // 8
    sql = f"""
    INSERT INTO focus_costs (billed_cost, billing_account_id, billing_currency, billing_period_start,
      billing_period_end, charge_category, charge_period_start, charge_period_end, contracted_cost, effective_cost,
      invoice_issuer_name, list_cost, provider_name, publisher_name, service_category, service_name, sub_account_id,
      pricing_category, commitment_discount_status, commitment_discount_id, commitment_discount_type,
      commitment_discount_quantity, commitment_discount_unit, x_instance_type, x_source, x_billing_period,
      x_provider, x_load_id)
    WITH base AS (
      SELECT i, CAST(hash(i + {seed}) >> 1 AS BIGINT) AS h, (i % 365) AS d, (i % 3) AS p FROM range({rows}) t(i)
    ), r AS (
      SELECT *, (h >> 8) % 10 AS kind, (p * 8 + (h >> 16) % 8) AS ti,
        CAST(((h >> 24) % 100000) AS DECIMAL(38,10)) / 100 AS lst,
        DATE '{START}' + CAST(d AS INTEGER) AS day
      FROM base
    ), x AS (
      SELECT *, list_value({", ".join(f"'{p}'" for p in provs)})[p + 1] AS prov,
        list_value({types})[ti + 1] AS itype,
        CASE WHEN kind < 4 THEN 'Used' WHEN kind = 4 AND p <> 1 THEN 'Unused' END AS status,
        'commit-' || CAST(p AS VARCHAR) || '-' || CAST((h >> 40) % 4 AS VARCHAR) AS cid
      FROM r
    )
    SELECT CASE WHEN status IS NULL THEN lst ELSE 0 END, 'payer-' || prov, 'USD',
      date_trunc('month', day), date_trunc('month', day) + INTERVAL 1 MONTH, 'Usage',
      CAST(day AS TIMESTAMP) + INTERVAL ((h >> 32) % 24) HOUR, CAST(day AS TIMESTAMP) + INTERVAL ((h >> 32) % 24 + 1) HOUR,
      lst, CASE WHEN status = 'Used' THEN lst * 0.6 WHEN status = 'Unused' THEN lst / 10 ELSE lst END,
      prov, CASE WHEN status = 'Unused' THEN 0 ELSE lst END, prov, prov, 'Compute',
      CASE WHEN status = 'Unused' AND p = 0 THEN 'Savings Plans for AWS Compute usage' ELSE
        list_value('{SERVICE["aws"]}', '{SERVICE["gcp"]}', '{SERVICE["azure"]}')[p + 1] END,
      'acct-' || prov || '-' || CAST((h >> 48) % 6 AS VARCHAR),
      CASE WHEN status IS NOT NULL THEN 'Committed' WHEN kind = 9 THEN 'Dynamic' ELSE 'Standard' END,
      status, CASE WHEN status IS NOT NULL THEN cid END,
      CASE WHEN status IS NOT NULL THEN 'Reserved Instance' END,
      CASE WHEN status IS NOT NULL THEN CAST(1 AS DECIMAL(38,10)) END,
      CASE WHEN status IS NOT NULL THEN 'Hours' END,
      CASE WHEN status = 'Unused' THEN NULL ELSE itype END, 'bench-' || prov, strftime(day, '%Y-%m'), prov, 'bench'
    FROM x
    """
    wh.execute(sql)


def naive_lines(wh: DuckDBWarehouse, start: date, end: date) -> list[CommitmentLine]:
    """The baseline: every row fetched, one CommitmentLine each (no SQL grouping)."""
    sql = _SQL.format(provider_filter="", team_group="")
    head, _, _ = sql.partition("GROUP BY")
    head = head.replace("SUM(effective_cost), SUM(list_cost), SUM(commitment_discount_quantity)",
                        "effective_cost, list_cost, commitment_discount_quantity")  # fmt: skip
    rows = wh.query(
        head, [datetime.combine(start, datetime.min.time()), datetime.combine(end, datetime.min.time())]
    )
    return [
        CommitmentLine(
            r[0],
            r[1],
            r[2],
            _as_date(r[3]),
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            Decimal(r[12]),
            Decimal(r[13]),
            None if r[14] is None else Decimal(r[14]),
            days=max(int(r[11] or 1), 1),
        )  # fmt: skip
        for r in rows
    ]


def _key(rows: list) -> list:
    return sorted(u.__dict__.__repr__() for u in rows)


def bench_read(wh: DuckDBWarehouse) -> None:
    start, end = START, START + timedelta(days=365)
    t = time.perf_counter()
    lines = commitment_lines(wh, start, end)
    u_fast, c_fast = utilisation(lines, "month"), coverage(lines, "month")
    fast = time.perf_counter() - t
    t = time.perf_counter()
    raw = naive_lines(wh, start, end)
    u_slow, c_slow = utilisation(raw, "month"), coverage(raw, "month")
    slow = time.perf_counter() - t
    same = _key(u_fast) == _key(u_slow) and _key(c_fast) == _key(c_slow)
    print(f"read: {len(raw):,} usage rows -> {len(lines):,} SQL groups; "
          f"{len(u_fast):,} commitment-months, {len(c_fast):,} coverage groups")  # fmt: skip
    print(f"read: SQL-grouped {fast:.2f} s, naive Python pass {slow:.2f} s, ratio {slow / fast:.1f}x, "
          f"check={'ok' if same else 'MISMATCH'}")  # fmt: skip
    if not same:
        raise SystemExit("the grouped and the naive read disagree")


def naive_best(samples: list[Sample], offer: Offer) -> Decimal:
    """Every candidate's expected cost by a full pass over the weekday-weighted samples."""
    by_day: dict[int, list[Fraction]] = {}
    for s in samples:
        by_day.setdefault(s.at.weekday(), []).append(Fraction(s.rate))
    pairs = [(u, Fraction(1, len(by_day) * len(v))) for v in by_day.values() for u in v]
    d = Fraction(offer.discount)
    best: tuple[Fraction, Decimal] | None = None
    for k in sorted({Decimal(0), *(s.rate for s in samples)}):
        fk = Fraction(k)
        cost = fk * (1 - d) + sum((w * (u - fk) for u, w in pairs if u > fk), Fraction(0))
        if best is None or cost < best[0]:
            best = (cost, k)
    assert best is not None
    return best[1]


def bench_advice(seed: int) -> None:
    rng = random.Random(seed)
    offer = Offer("aws", "savings_plan", 3, "no_upfront", Decimal("0.40"))
    days = [START + timedelta(days=i) for i in range(365)]
    daily = [Sample(d, Decimal(rng.randint(0, 400_000)) / 100 * (Decimal("0.4") if d.weekday() >= 5 else 1))
             for d in days]  # fmt: skip
    t = time.perf_counter()
    fast_k = best_commitment(Distribution(daily), offer)
    fast = time.perf_counter() - t
    t = time.perf_counter()
    slow_k = naive_best(daily, offer)
    slow = time.perf_counter() - t
    print(f"advice: 365 daily samples: prefix sums {fast * 1000:.1f} ms, naive full passes {slow * 1000:.1f} ms, "
          f"ratio {slow / fast:.0f}x, check={'ok' if fast_k == slow_k else 'MISMATCH'} (k={fast_k})")  # fmt: skip
    if fast_k != slow_k:
        raise SystemExit("the prefix-sum and the naive optimum disagree")
    hourly = [Sample(datetime(2025, 1, 1) + timedelta(hours=h), Decimal(rng.randint(0, 40_000)) / 100)
              for h in range(8760)]  # fmt: skip
    t = time.perf_counter()
    best_commitment(Distribution(hourly), offer)
    print(f"advice: 8760 hourly samples (a year): prefix sums {time.perf_counter() - t:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="finops-bench-commitments-") as d:
        wh = DuckDBWarehouse(Path(d) / "w.duckdb")
        wh.migrate()
        t = time.perf_counter()
        generate(wh, a.rows, a.seed)
        print(f"generated {a.rows:,} FOCUS usage rows over 365 days in {time.perf_counter() - t:.1f} s")
        bench_read(wh)
        wh.close()
    bench_advice(a.seed)


if __name__ == "__main__":
    main()
