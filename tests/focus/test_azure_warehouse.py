"""Azure amortized (MCA, EUR) end to end into DuckDB and PostgreSQL, idempotent."""

from __future__ import annotations

from decimal import Decimal

from finops.demo import azure_generator as gen
from finops.focus.azure_cost import AMORTIZED
from tests.fixtures.focus_load import load_twice


def test_azure_into_warehouse(any_wh, tmp_path):
    sample = gen.generate(layout="mca", kind="amortized", days=2, currency="EUR")
    path = sample.write_csv(tmp_path / "part_0_0001.csv.gz", gz=True)
    first, second, (total, n) = load_twice(any_wh, AMORTIZED, [path], source="az-main", provider="azure")
    assert first.status == second.status == "loaded", first.message
    assert n == len(sample.rows)
    assert total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    eff = any_wh.query("SELECT sum(effective_cost) FROM focus_costs WHERE x_source = 'az-main'")[0][0]
    assert Decimal(eff).quantize(Decimal("0.01")) == sample.effective_total.quantize(Decimal("0.01"))
    tags = any_wh.query(
        "SELECT tags FROM focus_costs WHERE x_source = 'az-main' AND sku_meter = 'D8s v5' LIMIT 1"
    )[0][0]
    assert "team" in str(tags)
