"""Published exports as they arrive after passing through other people's tools: re-saved with
CRLF line ends or a byte-order mark, every field quoted, columns in another order, a column we do
not know added, headers lower- or upper-cased by a warehouse unload, gzip-compressed. Each must
convert exactly as the file as published does (same FOCUS rows, billed total to the cent, the
export's own total reconciled), never be refused for the transport. The published file itself
goes through the whole load (validation included) once; its variants through the conversion,
where every transport difference would show."""

from __future__ import annotations

import csv
import gzip
import io
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from finops.focus.aws_cur_mapping import CurLegacyConverter
from finops.focus.aws_focus import AwsFocusConverter
from finops.focus.azure_cost import AzureCostConverter
from finops.focus.azure_focus import AzureFocusConverter
from finops.focus.gcp_focus import CONVERTER as GCP_FOCUS
from finops.ingest import ConvertContext, RawBatch, convert_to_staging, load_batch

DATA = Path(__file__).resolve().parents[1] / "data"

# (published file, provider, billing period, converter factory); SOURCES.md beside each file
CASES: list[tuple[str, str, str, Callable[[], Any]]] = [
    ("azure/ea-actual-small.csv", "azure", "2023-09", lambda: AzureCostConverter("actual")),
    ("azure/ea-amortized-small.csv", "azure", "2023-09", lambda: AzureCostConverter("amortized")),
    ("aws/koku_2023-06-01.csv", "aws", "2023-06", CurLegacyConverter),
    ("aws/koku_test_cur_sample.csv", "aws", "2018-06", CurLegacyConverter),
    ("aws/focus_1.2_sample_aws_excerpt.csv", "aws", "2026-05", AwsFocusConverter),
    ("azure/focus_1.2_sample_azure_excerpt.csv", "azure", "2026-05", AzureFocusConverter),
    ("gcp/focus_1.2_sample_gcp_excerpt.csv", "gcp", "2026-05", lambda: GCP_FOCUS),
]


def _csv(rows: list[list[str]], **kw: Any) -> str:
    out = io.StringIO()
    csv.writer(out, **kw).writerows(rows)
    return out.getvalue()


def variants(text: str) -> Iterator[tuple[str, str]]:
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    head = rows[0]
    order = list(range(len(head)))
    random.Random(1).shuffle(order)
    yield "crlf", _csv(rows, lineterminator="\r\n")
    yield "bom", "\ufeff" + _csv(rows)
    yield "quote_all", _csv(rows, quoting=csv.QUOTE_ALL)
    yield "shuffled_columns", _csv([[r[i] for i in order] for r in rows])
    yield "unknown_column", _csv([[*r, "x_NewColumn" if n == 0 else "v"] for n, r in enumerate(rows)])
    yield "lower_case_header", _csv([[h.lower() for h in head], *rows[1:]])
    yield "upper_case_header", _csv([[h.upper() for h in head], *rows[1:]])


@pytest.mark.parametrize("case", CASES, ids=[Path(c[0]).stem for c in CASES])
def test_transport_never_changes_the_load(case, duckdb_wh, tmp_path):
    rel, provider, period, conv = case
    text = (DATA / rel).read_text(encoding="utf-8-sig")
    name = Path(rel).name
    published = load_batch(duckdb_wh, RawBatch("published", provider, period, [DATA / rel], "fp"), conv())
    assert published.status == "loaded", published.message

    got: dict[str, object] = {}
    files: list[tuple[str, Path]] = []
    for label, body in variants(text):
        path = tmp_path / label / name
        path.parent.mkdir()
        path.write_text(body, newline="")
        files.append((label, path))
    gz = tmp_path / "gzip" / f"{name}.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(text.encode()))
    files.append(("gzip", gz))
    for label, path in files:
        batch = RawBatch(f"v-{label}", provider, period, [path], "fp")
        try:
            res = convert_to_staging(
                batch,
                conv(),
                ConvertContext(batch.source, provider, period, "L"),
                tmp_path / f"{label}.parquet",
            )
        except Exception as e:  # noqa: BLE001 - reported per variant below
            got[label] = f"refused: {e}"
            continue
        got[label] = (res.row_count, res.focus_billed_total, res.raw_billed_total)
    want = (published.row_count, published.focus_billed_total, published.focus_billed_total)
    assert got == dict.fromkeys(got, want)
