"""Microsoft's published Azure cost exports (tests/data/azure, see SOURCES.md) through the real spine.

Each sample loads to the cent against a total computed here from the file's own text (Python
Decimal, not our SQL), a second load of the same delivery changes nothing, and its FOCUS export
passes the FinOps Foundation focus-validator with no failure but InvoiceId-C-004-C (the losing
branch of an OR, see docs/focus-validator.md)."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from finops.focus.azure_cost import AzureCostConverter
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch

DATA = Path(__file__).resolve().parents[1] / "data" / "azure"
# file, export kind, billing period, column holding the export's cost
SAMPLES = [
    ("ea-actual-small.csv", "actual", "2023-09"),
    ("ea-amortized-small.csv", "amortized", "2023-09"),
]
CENT = Decimal("0.01")


def _file_totals(path: Path) -> dict[str, Decimal]:
    """Sum of the Cost column per BillingCurrency, from the CSV text."""
    out: dict[str, Decimal] = defaultdict(Decimal)
    with open(path, newline="", encoding="utf-8-sig") as fh:
        for row in csv.DictReader(fh):
            out[row["BillingCurrency"]] += Decimal(row["Cost"])
    return dict(out)


def _load(wh, name: str, kind: str, period: str, fingerprint: str = "v1", force: bool = False):
    batch = RawBatch(
        source="az-sample",
        provider="azure",
        billing_period=period,
        files=[DATA / name],
        fingerprint=fingerprint,
    )
    return load_batch(wh, batch, AzureCostConverter(kind, agreement="ea"), force=force)


def _warehouse_totals(wh) -> tuple[dict[str, Decimal], dict[str, Decimal], int]:
    rows = wh.query(
        "SELECT billing_currency, sum(billed_cost), sum(effective_cost), count(*) FROM focus_costs "
        "WHERE x_source = 'az-sample' GROUP BY 1"
    )
    billed = {r[0]: Decimal(r[1]) for r in rows}
    effective = {r[0]: Decimal(r[2]) for r in rows}
    return billed, effective, sum(r[3] for r in rows)


@pytest.mark.parametrize(("name", "kind", "period"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_loads_to_the_cent_and_twice_changes_nothing(duckdb_wh, name, kind, period):
    want = _file_totals(DATA / name)
    with open(DATA / name, encoding="utf-8-sig") as fh:
        n_rows = sum(1 for _ in csv.DictReader(fh))
    first = _load(duckdb_wh, name, kind, period)
    assert first.status == "loaded", first.message
    billed, effective, n = _warehouse_totals(duckdb_wh)
    assert n == n_rows
    # actual: the Cost column is what was billed; amortized: it is the amortised (effective) cost
    got = billed if kind == "actual" else effective
    assert set(got) == set(want)
    for currency, total in want.items():
        assert got[currency].quantize(CENT) == total.quantize(CENT), currency
        assert abs(got[currency] - total) < Decimal("1e-8")  # each row rounds at DECIMAL(38,10) at most
    assert first.focus_billed_total == first.raw_billed_total

    assert _load(duckdb_wh, name, kind, period).status == "unchanged"
    assert _load(duckdb_wh, name, kind, period, force=True).status == "loaded"  # forced re-run: replaced
    assert _warehouse_totals(duckdb_wh) == (billed, effective, n)


def test_sample_units_are_scaled_exactly(duckdb_wh):
    """'10K' operations: quantity in operations, price per operation; cost unchanged."""
    assert _load(duckdb_wh, "ea-actual-small.csv", "actual", "2023-09").status == "loaded"
    row = duckdb_wh.query(
        "SELECT pricing_quantity, pricing_unit, list_unit_price, contracted_unit_price, billed_cost "
        "FROM focus_costs WHERE sku_meter = 'GRS List and Create Container Operations'"
    )[0]
    assert (Decimal(row[0]), row[1]) == (Decimal(4), "Units")  # 0.0004 x 10K
    assert Decimal(row[2]) == Decimal(row[3]) == Decimal("0.00001")  # 0.1 per 10K
    assert Decimal(row[4]) == Decimal("0.00004")
    units = {r[0] for r in duckdb_wh.query("SELECT DISTINCT pricing_unit FROM focus_costs")}
    assert units == {"Hours", "Units", "Units/Month"}


@pytest.mark.slow
@pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)
def test_every_azure_sample_passes_focus_validator(duckdb_wh, tmp_path):
    """One validator run over all Azure samples of September 2023 (each its own source): the EA
    actual and amortized exports and the FOCUS 1.0 / 1.0r2 / 1.2-preview files."""
    from finops.export import export_focus
    from finops.focus.azure_focus import AzureFocusConverter

    loads = [(f"az-{kind}", name, AzureCostConverter(kind, agreement="ea")) for name, kind, _ in SAMPLES]
    loads += [
        (f"az-focus-{v}", f"focus-{v}-constructed.csv", AzureFocusConverter())
        for v in ("1.0", "1.0r2", "1.2-preview")
    ]
    for source, name, conv in loads:
        batch = RawBatch(
            source=source.replace(".", "-"),
            provider="azure",
            billing_period="2023-09",
            files=[DATA / name],
            fingerprint="v1",
        )
        entry = load_batch(duckdb_wh, batch, conv)
        assert entry.status == "loaded", (name, entry.message)
    out = tmp_path / "focus.parquet"
    assert export_focus(duckdb_wh, "2023-09", out) == 11 + 12 * 4
    res = run_focus_validator(out)
    failures = [line for line in res.output.splitlines() if "FAIL" in line]
    assert res.failed == 1 and "InvoiceId-C-004-C" in failures[0], "\n".join(failures)
    status = {m.group(1): m.group(2) for m in re.finditer(r"(InvoiceId-C-\d{3}-\w): (PASS|FAIL)", res.output)}
    assert status["InvoiceId-C-003-C"] == status["InvoiceId-C-000-O"] == "PASS"
    assert res.passed > 100
