"""FOCUS UnitFormat normalisation: Python and SQL agree, and results pass the validator's grammar."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pytest

from finops.focus.units import ScaledUnit, UnitScaler, is_focus_unit, normalize_unit, scale_unit, unit_sql

SAMPLES = {
    "Hrs": "Hours",
    "GB-Mo": "GB-Months",
    "GB": "GB",
    "Requests": "Requests",
    "Lambda-GB-Second": "GB-Seconds",
    "ReadCapacityUnit-Hrs": "ReadCapacityUnit-Hours",
    "vCPU-Hours": "vCPU-Hours",
    "GB-Hrs": "GB-Hours",
    " Hrs ": "Hours",
    "": None,
    None: None,
}


@pytest.mark.parametrize(("raw", "want"), list(SAMPLES.items()))
def test_python_and_sql_agree(raw, want):
    assert normalize_unit(raw) == want
    con = duckdb.connect()
    assert (
        con.execute(f"SELECT {unit_sql('u')} FROM (SELECT CAST(? AS VARCHAR) AS u)", [raw]).fetchone()[0]
        == want
    )
    if want is not None:
        assert is_focus_unit(want)


def test_grammar_rejects_aws_spellings():
    assert not is_focus_unit("GB-Mo") and not is_focus_unit("Lambda-GB-Second")


# Units as the providers write them. Azure: UnitOfMeasure values of Microsoft's own table
# (microsoft/finops-toolkit src/open-data/PricingUnits.csv: unit, block size); GCP: billing export
# usage.pricing_unit; AWS: CUR pricing/unit. -> (FOCUS unit, multiplier)
SCALED = {
    "10K": ("Units", 10000),
    "1K": ("Units", 1000),
    "1M": ("Units", 1_000_000),
    "25K": ("Units", 25000),
    "100 Hours": ("Hours", 100),
    "1 Hour": ("Hours", 1),
    "10 Hours": ("Hours", 10),
    "1 1 Hour": ("Hours", 1),
    "1/Day": ("Units/Day", 1),
    "1 /Day": ("Units/Day", 1),
    "1/Month": ("Units/Month", 1),
    "100/Month": ("Units/Month", 100),
    "10K/Month": ("Units/Month", 10000),
    "1/10 Days": ("Units/10 Days", 1),
    "10 GB/Month": ("GB-Months", 10),
    "1 GB/Month": ("GB-Months", 1),
    "1 GB": ("GB", 1),
    "128 MB": ("MB", 128),
    "1 GB Hour": ("GB-Hours", 1),
    "100 GB Seconds": ("GB-Seconds", 100),
    "1 GiB/Hour": ("GiB-Hours", 1),
    "Gb / Month": ("GB-Months", 1),
    "1 GB/hora": ("GB-Hours", 1),
    "1 GB/月": ("GB-Months", 1),
    "1 小时": ("Hours", 1),
    "10K Transactions": ("Transactions", 10000),
    "1000000 Requests": ("Requests", 1_000_000),
    "1 API Calls": ("Requests", 1),
    "100 Core Hrs": ("Hours", 100),
    "1 Daily Connections": ("Connections/Day", 1),
    "1 Annual Domain": ("Domains/Year", 1),
    "1 Hourly Units": ("Units/Hour", 1),
    "Minute(s)": ("Minutes", 1),
    "Per Call": ("Calls", 1),
    "Unassigned": ("Units", 1),
    "1 IOPS/Month": ("IOPS/Month", 1),
    # a block whose reciprocal does not terminate stays in the unit, so no price is approximated
    "150 Hours": ("150 Hours", 1),
    "744 Connections": ("744 Connections", 1),
    "60 Minutes": ("60 Minutes", 1),
    "gibibyte month": ("GiB-Months", 1),
    "gibibyte": ("GiB", 1),
    "gibibyte hour": ("GiB-Hours", 1),
    "requests": ("Requests", 1),
    "hour": ("Hours", 1),
    "count": ("Count", 1),
    "seconds": ("Seconds", 1),
    "Hrs": ("Hours", 1),
    "GB-Mo": ("GB-Months", 1),
    "Lambda-GB-Second": ("GB-Seconds", 1),
    "IOs": ("IOs", 1),
}
UNKNOWN = ["10000 1,000s", "100 Mbps", "1 Cubic Meter/Month", "vCPU-Hours", "10 DBU Hours", "0"]


def _sql_scaled(units: list[str | None]) -> dict[str | None, tuple[str | None, Decimal, Decimal, Decimal]]:
    s = UnitScaler("u")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (u VARCHAR, q DECIMAL(38,12), p DECIMAL(38,10))")
    con.executemany("INSERT INTO t VALUES (?, 0.0004, 0.0237)", [[u] for u in units])
    rows = con.execute(
        f"SELECT u, {s.unit}, {s.mult}, {s.quantity('q')}, {s.price('p')} FROM ({s.relation('t')})"
    )
    return {r[0]: (r[1], Decimal(r[2]), Decimal(r[3]), Decimal(r[4])) for r in rows.fetchall()}


def test_scaling_table_python_and_sql_agree():
    sql = _sql_scaled([*SCALED, *UNKNOWN, "", None])
    for raw, (unit, mult) in SCALED.items():
        py = scale_unit(raw)
        assert (py.unit, py.multiplier) == (unit, Decimal(mult)), raw
        assert is_focus_unit(unit), unit
        # quantity x block and price / block, exactly, in SQL as in Python
        assert sql[raw] == (
            unit,
            Decimal(mult),
            py.quantity(Decimal("0.0004")),
            py.price(Decimal("0.0237")),
        ), raw
    for raw in UNKNOWN:  # kept as given, never scaled: the spine reports them, nothing stops
        assert scale_unit(raw) == ScaledUnit(raw) and sql[raw][:2] == (raw, 1), raw
    assert scale_unit("") == scale_unit(None) == ScaledUnit(None) and sql[None][0] is None


def test_block_price_is_exact_decimal():
    s = scale_unit("10K")
    assert s.quantity(Decimal("0.0004")) == Decimal("4") and s.price(Decimal("0.1")) == Decimal("0.00001")
    assert scale_unit("128 MB").price(Decimal("1")) == Decimal("0.0078125")  # 1/128 terminates: exact
    assert scale_unit("1M").price(Decimal("0.4")) == Decimal("4E-7")
    # cost is unchanged: block price x block quantity == unit price x unit quantity
    assert s.price(Decimal("0.1")) * s.quantity(Decimal("0.0004")) == Decimal("0.1") * Decimal("0.0004")


def test_normalize_unit_keeps_its_contract():
    """normalize_unit / unit_sql (used unscaled by other converters) never relabel a block unit."""
    assert normalize_unit("10K") == "10K" and normalize_unit("GB-Mo") == "GB-Months"
