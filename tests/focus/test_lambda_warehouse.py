"""Lambda lifetimes: m0500 tables on both backends and hourly FOCUS rows loaded exactly."""

from __future__ import annotations

from datetime import UTC

import pyarrow as pa
import pyarrow.parquet as pq

from finops.demo import lambda_generator as gen
from finops.focus.lambda_cloud import CONVERTER, billable_interval, observe
from tests.focus._wh_load import load_twice


def test_lambda_into_warehouse(any_wh, tmp_path):
    assert any_wh.table_exists("lambda_instance_lifetimes") and any_wh.table_exists("lambda_polls")
    s = gen.generate()
    known = {}
    for t, resp in zip(s.polls, s.responses, strict=True):
        known.update(observe(known, resp["data"], t))
    rows = []
    for lt in known.values():
        a, b = billable_interval(lt)
        rows.append({"instance_id": lt.instance_id, "name": lt.name, "instance_type": lt.instance_type,
                     "region": lt.region, "price_cents_per_hour": lt.price_cents_per_hour,
                     "bill_start": a.astimezone(UTC).replace(tzinfo=None), "bill_end": b.astimezone(UTC).replace(tzinfo=None),
                     "account_name": "acme"})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "l.parquet")
    first, second, (total, n) = load_twice(any_wh, CONVERTER, [tmp_path / "l.parquet"], source="lam", provider="lambda")
    assert first.status == second.status == "loaded", first.message
    assert total == gen.expected_total([(r["bill_start"], r["bill_end"], r["price_cents_per_hour"]) for r in rows])
    assert n == 8 + 15 + 3  # H100 02-09h, A10 01-15h, A100 11-13h
