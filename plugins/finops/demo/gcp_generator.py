"""Deterministic sample rows of the GCP detailed usage cost export (real nested schema).

Used by tests (raw parquet, bqemulator tables) and the demo. `generate()` returns the
rows plus the totals a correct FOCUS load must reproduce, computed independently of the
converter (plain Decimal arithmetic over the generated values).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from finops.focus.gcp_billing import INVOICE_TZ

BILLING_ACCOUNT = "01A2B3-C4D5E6-F7G8H9"

# (service id, description) ; (sku id, description, unit, pricing unit, usd list price per pricing unit)
_SKUS = [
    (
        ("6F81-5844-456A", "Compute Engine"),
        ("CP-N2-CORE", "N2 Instance Core running in Americas", "seconds", "hour", 0.031611),
    ),
    (
        ("6F81-5844-456A", "Compute Engine"),
        ("CP-A100-GPU", "Nvidia Tesla A100 GPU running in Americas", "seconds", "hour", 2.933908),
    ),
    (
        ("6F81-5844-456A", "Compute Engine"),
        ("CP-L4-SPOT", "Spot Preemptible Nvidia L4 GPU running in Americas", "seconds", "hour", 0.2240),
    ),
    (
        ("95FF-2EF5-5EA1", "Cloud Storage"),
        ("GCS-STD-US", "Standard Storage US Multi-region", "byte-seconds", "gibibyte month", 0.026),
    ),
    (("24E6-581D-38E5", "BigQuery"), ("BQ-ANALYSIS", "Analysis", "bytes", "tebibyte", 6.25)),
    (
        ("C7E2-9256-1C43", "Vertex AI"),
        (
            "VX-PRED-T4",
            "Vertex AI: Online/Batch Prediction NVIDIA T4 GPU running in Americas",
            "seconds",
            "hour",
            0.4025,
        ),
    ),
]

_PROJECTS = [
    ("ml-training-prod", "112233445566", "ML Training", [("team", "ml"), ("env", "prod")]),
    ("web-prod", "223344556677", "Web", [("team", "web"), ("env", "prod")]),
    ("data-lake", "334455667788", "Data Lake", [("team", "data")]),
]

BQ_SCHEMA: list[dict[str, Any]] = [
    {"name": "billing_account_id", "type": "STRING"},
    {
        "name": "service",
        "type": "RECORD",
        "fields": [{"name": "id", "type": "STRING"}, {"name": "description", "type": "STRING"}],
    },
    {
        "name": "sku",
        "type": "RECORD",
        "fields": [{"name": "id", "type": "STRING"}, {"name": "description", "type": "STRING"}],
    },
    {"name": "usage_start_time", "type": "TIMESTAMP"},
    {"name": "usage_end_time", "type": "TIMESTAMP"},
    {
        "name": "project",
        "type": "RECORD",
        "fields": [
            {"name": "id", "type": "STRING"},
            {"name": "number", "type": "STRING"},
            {"name": "name", "type": "STRING"},
            {
                "name": "labels",
                "type": "RECORD",
                "mode": "REPEATED",
                "fields": [{"name": "key", "type": "STRING"}, {"name": "value", "type": "STRING"}],
            },
            {"name": "ancestry_numbers", "type": "STRING"},
        ],
    },
    {
        "name": "labels",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [{"name": "key", "type": "STRING"}, {"name": "value", "type": "STRING"}],
    },
    {
        "name": "system_labels",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [{"name": "key", "type": "STRING"}, {"name": "value", "type": "STRING"}],
    },
    {
        "name": "location",
        "type": "RECORD",
        "fields": [
            {"name": "location", "type": "STRING"},
            {"name": "country", "type": "STRING"},
            {"name": "region", "type": "STRING"},
            {"name": "zone", "type": "STRING"},
        ],
    },
    {
        "name": "resource",
        "type": "RECORD",
        "fields": [{"name": "name", "type": "STRING"}, {"name": "global_name", "type": "STRING"}],
    },
    {"name": "export_time", "type": "TIMESTAMP"},
    {"name": "cost", "type": "FLOAT"},
    {"name": "currency", "type": "STRING"},
    {"name": "currency_conversion_rate", "type": "FLOAT"},
    {
        "name": "usage",
        "type": "RECORD",
        "fields": [
            {"name": "amount", "type": "FLOAT"},
            {"name": "unit", "type": "STRING"},
            {"name": "amount_in_pricing_units", "type": "FLOAT"},
            {"name": "pricing_unit", "type": "STRING"},
        ],
    },
    {
        "name": "credits",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "name", "type": "STRING"},
            {"name": "amount", "type": "FLOAT"},
            {"name": "full_name", "type": "STRING"},
            {"name": "id", "type": "STRING"},
            {"name": "type", "type": "STRING"},
        ],
    },
    {
        "name": "invoice",
        "type": "RECORD",
        "fields": [{"name": "month", "type": "STRING"}, {"name": "publisher_type", "type": "STRING"}],
    },
    {"name": "cost_type", "type": "STRING"},
    {
        "name": "adjustment_info",
        "type": "RECORD",
        "fields": [
            {"name": "id", "type": "STRING"},
            {"name": "description", "type": "STRING"},
            {"name": "mode", "type": "STRING"},
            {"name": "type", "type": "STRING"},
        ],
    },
    {
        "name": "price",
        "type": "RECORD",
        "fields": [
            {"name": "effective_price", "type": "NUMERIC"},
            {"name": "tier_start_amount", "type": "NUMERIC"},
            {"name": "unit", "type": "STRING"},
            {"name": "pricing_unit_quantity", "type": "NUMERIC"},
        ],
    },
    {"name": "cost_at_list", "type": "FLOAT"},
    {"name": "transaction_type", "type": "STRING"},
    {"name": "seller_name", "type": "STRING"},
    {"name": "subscription", "type": "RECORD", "fields": [{"name": "instance_id", "type": "STRING"}]},
]


def arrow_schema():
    """pyarrow schema equivalent of BQ_SCHEMA (what BigQuery's to_arrow() yields)."""
    import pyarrow as pa

    def conv(f: dict[str, Any]) -> pa.Field:
        t = f["type"]
        if t == "RECORD":
            typ: pa.DataType = pa.struct([conv(c) for c in f["fields"]])
        else:
            typ = {
                "STRING": pa.string(),
                "FLOAT": pa.float64(),
                "TIMESTAMP": pa.timestamp("us", tz="UTC"),
                "NUMERIC": pa.decimal128(38, 9),
            }[t]
        if f.get("mode") == "REPEATED":
            typ = pa.list_(typ)
        return pa.field(f["name"], typ)

    return pa.schema([conv(f) for f in BQ_SCHEMA])


@dataclass
class GcpSample:
    rows: list[dict[str, Any]]
    invoice_month: str  # YYYYMM
    billed_total: Decimal  # SUM(cost) + SUM(credits.amount), i.e. what the invoice states
    cost_total: Decimal
    credit_totals: dict[str, Decimal] = field(default_factory=dict)  # by credit type
    promotion_credit_rows: int = 0

    def write_parquet(self, path: Path) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.rows, schema=arrow_schema()), path)
        return path

    def json_rows(self) -> list[dict[str, Any]]:
        """Rows for BigQuery insert_rows_json (timestamps as RFC 3339 strings)."""

        def enc(v: Any) -> Any:
            if isinstance(v, datetime):
                return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            if isinstance(v, Decimal):
                return str(v)
            if isinstance(v, dict):
                return {k: enc(x) for k, x in v.items()}
            if isinstance(v, list):
                return [enc(x) for x in v]
            return v

        return [enc(r) for r in self.rows]


def _d(x: float) -> Decimal:
    return Decimal(repr(x))


def _row(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "billing_account_id": BILLING_ACCOUNT,
        "labels": [],
        "system_labels": [],
        "credits": [],
        "currency": "USD",
        "currency_conversion_rate": 1.0,
        "cost_type": "regular",
        "transaction_type": "GOOGLE",
        "seller_name": None,
        "adjustment_info": None,
        "subscription": None,
        "cost_at_list": None,
        "resource": {"name": None, "global_name": None},
        "price": None,
        "location": {"location": "us", "country": "US", "region": None, "zone": None},
    }
    base.update(kw)
    return base


def generate(
    period: str = "2026-10", days: int = 3, seed: int = 7, currency: str = "USD", export_lag_hours: int = 6
) -> GcpSample:
    """Hourly resource-level rows for `days` days of invoice month `period` (YYYY-MM),
    plus one tax, one adjustment, one rounding-error and one commitment-fee row."""
    rng = random.Random(seed)
    year, month = (int(p) for p in period.split("-"))
    inv = f"{year:04d}{month:02d}"
    start = datetime(year, month, 1, tzinfo=ZoneInfo(INVOICE_TZ)).astimezone(
        UTC
    )  # invoice months are Pacific
    rate = 1.0 if currency == "USD" else 0.92
    rows: list[dict[str, Any]] = []
    for h in range(days * 24):
        t0 = start + timedelta(hours=h)
        for (svc_id, svc), (sku_id, sku_desc, unit, punit, price) in _SKUS:
            proj_id, proj_num, proj_name, plabels = _PROJECTS[rng.randrange(len(_PROJECTS))]
            qty_p = round(rng.uniform(0.5, 8.0), 3)  # pricing units
            list_cost = round(qty_p * price * rate, 6)
            cost = list_cost
            credits: list[dict[str, Any]] = []
            zone = "us-central1-" + rng.choice("abcf")
            machine = None
            if svc == "Compute Engine":
                machine = (
                    "a2-highgpu-1g"
                    if "A100" in sku_desc
                    else ("g2-standard-8" if "L4" in sku_desc else "n2-standard-8")
                )
            if sku_id == "CP-N2-CORE":  # sustained use discount, 20 %
                credits.append(
                    {
                        "name": "Sustained Usage Discount",
                        "amount": -round(cost * 0.2, 6),
                        "full_name": "Sustained Usage Discount",
                        "id": "SustainedUsageDiscount",
                        "type": "SUSTAINED_USAGE_DISCOUNT",
                    }
                )
            if sku_id == "CP-A100-GPU" and h % 2 == 0:  # half the hours covered by a resource CUD
                credits.append(
                    {
                        "name": "Committed use discount: GPU",
                        "amount": -round(cost * 0.55, 6),
                        "full_name": "Committed use discount - GPU A100 us-central1",
                        "id": "CommittedUsageDiscount:8c5f7e1a",
                        "type": "COMMITTED_USAGE_DISCOUNT",
                    }
                )
            if sku_id == "BQ-ANALYSIS" and h < 24:  # free tier
                credits.append(
                    {
                        "name": "Free tier",
                        "amount": -round(cost * 0.1, 6),
                        "full_name": "Free tier",
                        "id": "FreeTier",
                        "type": "FREE_TIER",
                    }
                )
            if sku_id == "VX-PRED-T4" and h % 5 == 0:  # promotional (trial) credits
                credits.append(
                    {
                        "name": "Vertex AI trial credit",
                        "amount": -round(cost * 0.5, 6),
                        "full_name": "Vertex AI trial credit 2026",
                        "id": "Promo:vx-2026",
                        "type": "PROMOTION",
                    }
                )
            res_name = f"{sku_id.lower()}-{proj_id}-{h % 4}"
            gname = (
                f"//compute.googleapis.com/projects/{proj_id}/zones/{zone}/instances/{res_name}"
                if svc == "Compute Engine"
                else None
            )
            rlabels = [{"key": "workload", "value": rng.choice(["train", "serve", "etl"])}]
            if h % 7 == 0:
                rlabels.append({"key": "team", "value": "research"})  # overrides the project label
            sys_labels = [{"key": "compute.googleapis.com/machine_spec", "value": machine}] if machine else []
            rows.append(
                _row(
                    service={"id": svc_id, "description": svc},
                    sku={"id": sku_id, "description": sku_desc},
                    usage_start_time=t0,
                    usage_end_time=t0 + timedelta(hours=1),
                    project={
                        "id": proj_id,
                        "number": proj_num,
                        "name": proj_name,
                        "labels": [{"key": k, "value": v} for k, v in plabels],
                        "ancestry_numbers": f"/123456789/{proj_num}/",
                    },
                    labels=rlabels,
                    system_labels=sys_labels,
                    location={
                        "location": "us-central1",
                        "country": "US",
                        "region": "us-central1",
                        "zone": zone if svc == "Compute Engine" else None,
                    },
                    resource={"name": res_name if gname else None, "global_name": gname},
                    export_time=t0 + timedelta(hours=export_lag_hours),
                    cost=cost,
                    currency=currency,
                    currency_conversion_rate=rate,
                    usage={
                        "amount": qty_p * 3600 if unit == "seconds" else qty_p,
                        "unit": unit,
                        "amount_in_pricing_units": qty_p,
                        "pricing_unit": punit,
                    },
                    credits=credits,
                    invoice={"month": inv, "publisher_type": "GOOGLE"},
                    price={
                        "effective_price": Decimal(str(round(price * rate, 6))),
                        "tier_start_amount": Decimal(0),
                        "unit": punit,
                        "pricing_unit_quantity": Decimal(1),
                    },
                    cost_at_list=list_cost,
                )
            )
    end = start + timedelta(days=days)
    rows.append(
        _row(
            service={"id": "6F81-5844-456A", "description": "Compute Engine"},
            sku={"id": "CUD-GPU-1Y", "description": "Commitment v1: A100 GPU in Americas for 1 Year"},
            usage_start_time=start,
            usage_end_time=end,
            project=_proj(0),
            export_time=end,
            cost=round(310.5 * rate, 6),
            currency=currency,
            currency_conversion_rate=rate,
            usage={
                "amount": 72.0,
                "unit": "seconds",
                "amount_in_pricing_units": 72.0,
                "pricing_unit": "hour",
            },
            invoice={"month": inv, "publisher_type": "GOOGLE"},
            subscription={"instance_id": "cud-a100-1y"},
            location={"location": "us-central1", "country": "US", "region": "us-central1", "zone": None},
        )
    )
    rows.append(
        _row(
            service={"id": "5A2E-AAAA-0001", "description": "Invoice"},
            sku={"id": "TAX-US", "description": "Tax"},
            usage_start_time=start,
            usage_end_time=end,
            project=_proj(None),
            export_time=end,
            cost=round(41.37 * rate, 6),
            currency=currency,
            currency_conversion_rate=rate,
            cost_type="tax",
            usage={"amount": 0.0, "unit": None, "amount_in_pricing_units": 0.0, "pricing_unit": None},
            invoice={"month": inv, "publisher_type": "GOOGLE"},
        )
    )
    rows.append(
        _row(
            service={"id": "6F81-5844-456A", "description": "Compute Engine"},
            sku={"id": "CP-N2-CORE", "description": "N2 Instance Core running in Americas"},
            usage_start_time=start,
            usage_end_time=end,
            project=_proj(1),
            export_time=end,
            cost=round(-12.5 * rate, 6),
            currency=currency,
            currency_conversion_rate=rate,
            cost_type="adjustment",
            adjustment_info={
                "id": "adj-2026-001",
                "description": "Goodwill credit for incident INC-4411",
                "mode": "MANUAL_ADJUSTMENT",
                "type": "GENERAL_ADJUSTMENT",
            },
            usage={"amount": 0.0, "unit": "seconds", "amount_in_pricing_units": 0.0, "pricing_unit": "hour"},
            invoice={"month": inv, "publisher_type": "GOOGLE"},
        )
    )
    rows.append(
        _row(
            service={"id": "5A2E-AAAA-0001", "description": "Invoice"},
            sku={"id": "ROUND", "description": "Rounding error"},
            usage_start_time=start,
            usage_end_time=end,
            project=_proj(None),
            export_time=end,
            cost=0.003,
            currency=currency,
            currency_conversion_rate=rate,
            cost_type="rounding_error",
            usage={"amount": 0.0, "unit": None, "amount_in_pricing_units": 0.0, "pricing_unit": None},
            invoice={"month": inv, "publisher_type": "GOOGLE"},
        )
    )
    return summarise(rows, inv)


def _proj(i: int | None) -> dict[str, Any] | None:
    if i is None:
        return None
    pid, num, name, labels = _PROJECTS[i]
    return {
        "id": pid,
        "number": num,
        "name": name,
        "labels": [{"key": k, "value": v} for k, v in labels],
        "ancestry_numbers": f"/123456789/{num}/",
    }


def summarise(rows: list[dict[str, Any]], invoice_month: str) -> GcpSample:
    """Expected totals, computed with Decimal straight from the generated values."""
    cost_total = sum((_d(r["cost"]) for r in rows), Decimal(0))
    by_type: dict[str, Decimal] = {}
    promo = 0
    for r in rows:
        for c in r["credits"]:
            by_type[c["type"]] = by_type.get(c["type"], Decimal(0)) + _d(c["amount"])
            promo += c["type"] == "PROMOTION"
    billed = cost_total + sum(by_type.values(), Decimal(0))
    return GcpSample(
        rows=rows,
        invoice_month=invoice_month,
        billed_total=billed,
        cost_total=cost_total,
        credit_totals=by_type,
        promotion_credit_rows=promo,
    )


def late_rows(sample: GcpSample, n: int = 3, lag_days: int = 4) -> list[dict[str, Any]]:
    """Extra rows for the same invoice month arriving later (export_time + lag_days):
    the rolling reload window must pick them up."""
    out = []
    for r in sample.rows[:n]:
        late = dict(r)
        late["export_time"] = r["export_time"] + timedelta(days=lag_days)
        late["cost"] = round(r["cost"] * 0.1, 6)
        late["credits"] = []
        late["cost_at_list"] = late["cost"]
        out.append(late)
    return out


def _n(x: float) -> Decimal:
    """BigQuery NUMERIC: 9 decimal places."""
    return Decimal(repr(x)).quantize(Decimal("1e-9"))


def focus_view_rows(sample: GcpSample) -> list[dict[str, Any]]:
    """The same rows as GCP's published FOCUS BigQuery view would return them
    (looker-open-source/google_cloud_focus, focus_bigquery_view.sql): BilledCost = EffectiveCost
    = cost + SUM(credits.amount), ContractedCost = cost, the credits itemised in x_Credits,
    lower-case enums, Tags as an array."""
    out = []
    for r in sample.rows:
        proj = r["project"] or {}
        net = _n(r["cost"]) + sum((_n(c["amount"]) for c in r["credits"]), Decimal(0))  # NUMERIC sums exactly
        cud = next((c for c in r["credits"] if c["type"].startswith("COMMITTED_USAGE")), None)
        regular = r["cost_type"] == "regular"
        tags = [
            {
                "key": x["key"],
                "value": x["value"],
                "x_type": "label",
                "x_inherited": False,
                "x_namespace": "n/a",
            }
            for x in r["labels"]
        ]
        tags += [
            {
                "key": x["key"],
                "value": x["value"],
                "x_type": "system_label",
                "x_inherited": False,
                "x_namespace": "n/a",
            }
            for x in r["system_labels"]
        ]
        tags += [
            {
                "key": x["key"],
                "value": x["value"],
                "x_type": "project_label",
                "x_inherited": True,
                "x_namespace": "n/a",
            }
            for x in proj.get("labels", [])
        ]
        y, m = int(sample.invoice_month[:4]), int(sample.invoice_month[4:])
        out.append(
            {
                "AvailabilityZone": r["location"]["zone"],
                "BilledCost": net,
                "BillingAccountId": r["billing_account_id"],
                "BillingCurrency": r["currency"],
                "BillingPeriodStart": datetime(y, m, 1, 7, tzinfo=UTC),  # Pacific midnight
                "BillingPeriodEnd": datetime(y, m, 28, 7, tzinfo=UTC),  # the view's inclusive "last day"
                "ChargeCategory": {"regular": "usage", "tax": "tax"}.get(r["cost_type"], "adjustment"),
                "ChargeClass": "correction" if r["adjustment_info"] else None,
                "ChargeDescription": r["sku"]["description"],
                "ChargePeriodStart": r["usage_start_time"],
                "ChargePeriodEnd": r["usage_end_time"],
                "CommitmentDiscountCategory": "Usage" if cud else None,
                "CommitmentDiscountName": cud["full_name"] if cud else None,
                "ConsumedQuantity": _n(r["usage"]["amount"]) if regular else None,
                "ConsumedUnit": r["usage"]["unit"] if regular else None,
                "ContractedCost": _n(r["cost"]),
                "EffectiveCost": net,
                "ListCost": _n(r["cost_at_list"] if r["cost_at_list"] is not None else r["cost"]),
                "PricingCategory": ("committed" if cud else "standard") if regular else None,
                "PricingQuantity": _n(r["usage"]["amount_in_pricing_units"]) if regular else None,
                "PricingUnit": r["usage"]["pricing_unit"] if regular else None,
                "ProviderName": "Google Cloud",
                "PublisherName": "Google Cloud",
                "RegionId": r["location"]["region"],
                "ResourceId": r["resource"]["global_name"],
                "ResourceName": r["resource"]["name"],
                "ServiceCategory": "GCP > Compute"
                if r["service"]["description"] == "Compute Engine"
                else None,
                "ServiceName": r["service"]["description"],
                "SkuId": r["sku"]["id"] if regular else None,
                "SubAccountId": r["billing_account_id"],
                "Tags": tags,
                "x_Credits": [
                    {
                        "Name": c["name"],
                        "Amount": _n(c["amount"]),
                        "FullName": c["full_name"],
                        "Id": c["id"],
                        "Type": c["type"],
                    }
                    for c in r["credits"]
                ],
                "x_CostType": r["cost_type"],
                "x_ServiceId": r["service"]["id"],
            }
        )
    return out


def write_focus_view_parquet(sample: GcpSample, path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    dec = pa.decimal128(38, 9)
    tag = pa.struct(
        [
            ("key", pa.string()),
            ("value", pa.string()),
            ("x_type", pa.string()),
            ("x_inherited", pa.bool_()),
            ("x_namespace", pa.string()),
        ]
    )
    credit = pa.struct(
        [
            ("Name", pa.string()),
            ("Amount", dec),
            ("FullName", pa.string()),
            ("Id", pa.string()),
            ("Type", pa.string()),
        ]
    )
    rows = focus_view_rows(sample)
    fields = []
    for k in rows[0]:
        if k == "Tags":
            t: pa.DataType = pa.list_(tag)
        elif k == "x_Credits":
            t = pa.list_(credit)
        elif k in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
            t = pa.timestamp("us", tz="UTC")
        elif isinstance(rows[0][k], Decimal) or k.endswith(("Cost", "Quantity")):
            t = dec
        else:
            t = pa.string()
        fields.append(pa.field(k, t))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), path)
    return path
