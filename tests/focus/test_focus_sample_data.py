"""The FinOps Foundation's FOCUS 1.2 sample data for AWS and Azure (excerpts, as published: see
tests/data/{aws,azure}/SOURCES.md) loads through our FOCUS converters to the cent, commitment
purchases and covered usage included, and a reload replaces rather than adds. Written by the
sample data's own generator, not ours: a row shape or value our converters did not expect
would quarantine here."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from finops.export import export_focus
from finops.focus.aws_focus import AwsFocusConverter
from finops.focus.azure_focus import AzureFocusConverter
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch

DATA = Path(__file__).resolve().parents[1] / "data"
CASES = [
    # (file, provider, converter, billed, effective, ProviderName)
    ("aws/focus_1.2_sample_aws_excerpt.csv", "aws", AwsFocusConverter, "1171.130614", "49.418038", "AWS"),
    (
        "azure/focus_1.2_sample_azure_excerpt.csv",
        "azure",
        AzureFocusConverter,
        "2406.160549",
        "162.607333",
        "Microsoft Azure",
    ),
]


def _published_total(path: Path, column: str) -> Decimal:
    ((total,),) = duckdb.sql(
        f"SELECT sum(CAST({column} AS DECIMAL(38,10))) FROM read_csv('{path}', header = true, all_varchar = true)"
    ).fetchall()
    return Decimal(total)


@pytest.mark.parametrize(
    ("rel", "provider", "conv", "billed", "effective", "name"), CASES, ids=["aws", "azure"]
)
def test_focus_sample_loads_to_the_cent(duckdb_wh, rel, provider, conv, billed, effective, name):
    path = DATA / rel
    assert _published_total(path, "BilledCost") == Decimal(billed)
    assert _published_total(path, "EffectiveCost") == Decimal(effective)
    batch = RawBatch(
        source=f"sample-{provider}",
        provider=provider,
        billing_period="2026-05",
        files=[path],
        fingerprint="v1",
    )

    entry = load_batch(duckdb_wh, batch, conv())
    assert entry.status == "loaded", entry.message
    assert entry.raw_billed_total == entry.focus_billed_total == Decimal(billed)
    assert load_batch(duckdb_wh, batch, conv(), force=True).status == "loaded"

    got = duckdb_wh.query(
        "SELECT count(*), sum(billed_cost), sum(effective_cost), min(provider_name), max(provider_name) "
        "FROM focus_costs"
    )[0]
    assert got == (6, Decimal(billed), Decimal(effective), name, name)  # replaced, not added
    purchases = duckdb_wh.query(
        "SELECT commitment_discount_type, billed_cost, effective_cost FROM focus_costs "
        "WHERE charge_category = 'Purchase' ORDER BY commitment_discount_type"
    )
    assert [(t, b, e) for t, b, e in purchases] == [
        (t, Decimal(p), Decimal(0))
        for t, p in (
            [("Reserved Instance", "560.92032"), ("Savings Plan", "560.92032")]
            if provider == "aws"
            else [("Reservation", "1121.84064"), ("Savings Plan", "1121.84064")]
        )
    ]
    covered = duckdb_wh.query(
        "SELECT count(*) FROM focus_costs WHERE pricing_category = 'Committed' "
        "AND commitment_discount_status = 'Used' AND billed_cost = 0 AND effective_cost > 0"
    )[0][0]
    assert covered == (2 if provider == "aws" else 1)
    tags = {json.dumps(sorted(json.loads(t))) for (t,) in duckdb_wh.query("SELECT tags FROM focus_costs")}
    assert tags == {json.dumps(["CostCenter", "Environment", "Owner"])}


@pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)
def test_focus_samples_export_passes_focus_validator(duckdb_wh, tmp_path):
    """Both samples in one May 2026 warehouse; our FOCUS export of it through the FinOps
    Foundation's focus-validator: nothing fails beyond the InvoiceId rule docs/focus-validator.md
    explains (InvoiceId-C-004-C, an open month's invoice)."""
    for rel, provider, conv, *_ in CASES:
        batch = RawBatch(
            source=f"sample-{provider}",
            provider=provider,
            billing_period="2026-05",
            files=[DATA / rel],
            fingerprint="v1",
        )
        assert load_batch(duckdb_wh, batch, conv()).status == "loaded"
    out = tmp_path / "focus.parquet"
    assert export_focus(duckdb_wh, "2026-05", out) == 12
    res = run_focus_validator(out)
    fails = [line for line in res.output.splitlines() if "FAIL" in line]
    assert res.output.count("PASS") > 100  # the rules really ran
    assert all("InvoiceId-C-004-C" in line for line in fails), "\n".join(fails)
