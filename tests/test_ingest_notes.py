"""What a load says besides its totals (issue 16): the export variant its converter detected,
the rows per FOCUS column filled in because the export lacks them, and unit values outside
FOCUS UnitFormat: stored per load in load_log (DuckDB and PostgreSQL, direct and staging
loads) and said in the load's warning. An unknown unit never quarantines a month."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from decimal import Decimal as D

import pytest

from finops.focus.aws_cur_mapping import Cur2Converter
from finops.focus.azure_focus import AzureFocusConverter
from finops.ingest import RawBatch, load_batch
from tests.fixtures.billing_batches import azure_focus_csv, cur2_parquet


class Cur2WithNotes(Cur2Converter):
    """CUR 2.0 with the two optional contract methods, as a provider converter implements them."""

    def variant(self, columns: Sequence[str]) -> str:
        ids = "with resource ids" if "line_item_resource_id" in columns else "without resource ids"
        return f"CUR 2.0 ({ids})"

    def derived_counts_sql(self, raw: str) -> str:
        return (
            f"SELECT 'ChargeDescription' AS column, count(*) AS rows FROM {raw} "
            "WHERE line_item_line_item_description IS NULL"
        )


def _logged(wh, load_id: str) -> tuple:
    row = wh.query(
        "SELECT status, variant, derived_columns, unknown_units FROM load_log WHERE load_id = ? "
        "ORDER BY finished_at DESC LIMIT 1",
        [load_id],
    )[0]
    as_json = [v if v is None or isinstance(v, dict) else json.loads(v) for v in row[2:]]
    return (row[0], row[1], *as_json)


@pytest.mark.parametrize("any_wh", ["duckdb", "postgres"], indirect=True)
@pytest.mark.parametrize("direct", [None, False], ids=["default", "staging"])
def test_variant_derived_columns_and_unknown_units_are_recorded(
    any_wh, tmp_path, finops_home, alerts, direct, caplog
):
    raw = cur2_parquet(
        tmp_path / "cur.parquet",
        [
            {},
            {"line_item_line_item_description": None},
            {"line_item_line_item_description": None, "pricing_unit": "10K"},
            {"pricing_unit": "Bogus/Unit*"},
        ],
    )
    caplog.set_level(logging.WARNING, logger="finops.ingest")
    entry = load_batch(
        any_wh, RawBatch("notes", "aws", "2025-03", [raw], "fp-1"), Cur2WithNotes(), direct=direct
    )

    assert entry.status == "loaded", entry.message  # unknown units never quarantine
    assert entry.focus_billed_total == D("13.00")
    assert entry.variant == "CUR 2.0 (with resource ids)"
    assert entry.derived_columns == {"ChargeDescription": 2}
    assert entry.unknown_units is not None
    assert entry.unknown_units["PricingUnit"] == {"10K": 1, "Bogus/Unit*": 1}
    assert _logged(any_wh, entry.load_id) == (
        "loaded",
        entry.variant,
        entry.derived_columns,
        entry.unknown_units,
    )
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "loaded 4 rows" in r.getMessage()
    ]
    assert len(warned) == 1, caplog.text
    assert "variant CUR 2.0 (with resource ids)" in warned[0]
    assert "derived: ChargeDescription 2 rows" in warned[0]
    assert (
        "unknown units kept (not FOCUS UnitFormat): " in warned[0] and "PricingUnit '10K' 1 row" in warned[0]
    )
    assert alerts == []


class Bare:
    """Only the Converter protocol's required methods (and normalize_sql), nothing optional."""

    name = "cur2_bare"

    def __init__(self) -> None:
        self._cur = Cur2Converter()
        self.reader_sql, self.normalize_sql = self._cur.reader_sql, self._cur.normalize_sql
        self.focus_sql, self.raw_billed_totals_sql = self._cur.focus_sql, self._cur.raw_billed_totals_sql


def test_a_converter_without_the_optional_methods_still_loads(
    duckdb_wh, tmp_path, finops_home, alerts, caplog
):
    raw = cur2_parquet(tmp_path / "cur.parquet", [{}, {"pricing_unit": "GB-Mo"}])
    caplog.set_level(logging.INFO, logger="finops.ingest")
    entry = load_batch(duckdb_wh, RawBatch("plain", "aws", "2025-03", [raw], "fp-1"), Bare())
    assert entry.status == "loaded", entry.message
    assert (entry.variant, entry.derived_columns, entry.unknown_units) == (None, None, None)
    assert _logged(duckdb_wh, entry.load_id) == ("loaded", None, None, None)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


class BrokenNotes(Cur2Converter):
    def variant(self, columns: Sequence[str]) -> str:
        raise KeyError("no such column")

    def derived_counts_sql(self, raw: str) -> str:
        return f"SELECT no_such_column, 1 FROM {raw}"


def test_failing_notes_never_fail_the_load(duckdb_wh, tmp_path, finops_home, alerts, caplog):
    raw = cur2_parquet(tmp_path / "cur.parquet", [{}])
    entry = load_batch(duckdb_wh, RawBatch("broken", "aws", "2025-03", [raw], "fp-1"), BrokenNotes())
    assert entry.status == "loaded", entry.message
    assert (entry.variant, entry.derived_columns) == (None, None)
    assert "variant detection failed" in caplog.text and "derived-column count failed" in caplog.text


@pytest.mark.parametrize("any_wh", ["duckdb", "postgres"], indirect=True)
@pytest.mark.parametrize("direct", [None, False], ids=["default", "staging"])
def test_nested_tag_values_are_stringified_and_counted(any_wh, tmp_path, finops_home, alerts, direct):
    """FOCUS KeyValueFormat allows no object or array as a value. A real export carrying one
    loads, its value kept whole as JSON text, and the rows are counted (issue 23)."""
    nested = '{"team": "ml", "owner": {"name": "ana", "ids": [1, 2]}, "cc": ["a", "b"]}'
    raw = azure_focus_csv(tmp_path / "focus.csv", tags={0: nested, 1: '{"team": "web"}'})
    entry = load_batch(
        any_wh, RawBatch("az", "azure", "2026-10", [raw], "fp-1"), AzureFocusConverter(), direct=direct
    )

    assert entry.status == "loaded", entry.message
    assert entry.derived_columns is not None  # the converter's own counts may stand beside it
    assert entry.derived_columns["Tags (nested values stringified)"] == 1
    tags = [
        t if isinstance(t, dict) else json.loads(t)
        for (t,) in any_wh.query("SELECT tags FROM focus_costs WHERE x_source = 'az' AND tags IS NOT NULL")
    ]
    stringified = [t for t in tags if "owner" in t]
    assert stringified == [{"team": "ml", "owner": '{"name":"ana","ids":[1,2]}', "cc": '["a","b"]'}]
    assert {"team": "web"} in tags
