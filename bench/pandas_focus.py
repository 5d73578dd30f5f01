"""The straightforward pandas version of our AWS CUR 2.0 -> FOCUS 1.2 mapping (benchmark foil).

Why this exists: bench/ingest.py compares the spine (DuckDB SQL in finops.focus.aws_cur_mapping,
streamed raw parquet -> staging parquet) with "a pandas implementation of the same mapping".
That comparison is only honest if pandas does the SAME work: all 65 FOCUS columns, the same
CASE rules, the two-row split of commitment fee lines, unit normalisation, service lookup and
tags as JSON. tests/bench/test_pandas_focus_parity.py proves it, column by column, against the
real spine on generated CUR months.

Written the way a competent pandas user would: load the whole file into memory, vectorised
numpy.select / np.where / Series.map / .str accessors, and tags through json.dumps per row
(the obvious approach; pandas has no vectorised map -> JSON). Its logic is independent: it
uses neither our SQL nor DuckDB. It shares only lookup data with the spine (service and
line-item-type tables from finops.focus.aws_cur_mapping, `normalize_unit` from finops.focus.units, the
Python twin of the SQL unit rule), so there is one copy of each table in the repo.

Money is float64, not exact decimals: that is what a straightforward pandas path uses
(Decimal objects would be far slower still), so totals can be off by float rounding. The
spine keeps DECIMAL(38,10) end to end and reconciles to the cent; the parity test compares
money within 1e-6.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

# Lookup DATA shared with the spine (one copy of each table in the repo); the mapping LOGIC below
# is this module's own. COMMITMENT_FEES -> a Purchase row + an Unused usage row.
from finops.focus.aws_cur_mapping import COMMITMENT_FEES, RI_TYPES, SERVICE_CLASSES, SERVICE_NAMES, SP_TYPES
from finops.focus.units import normalize_unit

# --------------------------------------------------------------------------- lookup tables
PURCHASE_TYPES = ("Fee", "RIFee", "SavingsPlanUpfrontFee", "SavingsPlanRecurringFee")
USAGE_TYPES = (
    "Usage",
    "DiscountedUsage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "BundledDiscount",
)
COMMITTED_USAGE = ("DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation")
COMMITTED_FEES = ("RIFee", "SavingsPlanRecurringFee", "SavingsPlanUpfrontFee")

# The raw columns the mapping reads: a competent pandas user loads only these (CUR 2.0 has ~125,
# and its MAP columns are slow to turn into Python objects), as DuckDB's projection pushdown does.
RAW_COLUMNS = (
    "bill_bill_type",
    "bill_billing_entity",
    "bill_billing_period_end_date",
    "bill_billing_period_start_date",
    "bill_invoice_id",
    "bill_payer_account_id",
    "bill_payer_account_name",
    "capacity_reservation_capacity_reservation_a_r_n",
    "capacity_reservation_capacity_reservation_status",
    "line_item_availability_zone",
    "line_item_currency_code",
    "line_item_legal_entity",
    "line_item_line_item_description",
    "line_item_line_item_type",
    "line_item_net_unblended_cost",
    "line_item_net_unblended_rate",
    "line_item_operation",
    "line_item_product_code",
    "line_item_resource_id",
    "line_item_unblended_cost",
    "line_item_unblended_rate",
    "line_item_usage_account_id",
    "line_item_usage_account_name",
    "line_item_usage_amount",
    "line_item_usage_end_date",
    "line_item_usage_start_date",
    "line_item_usage_type",
    "pricing_currency",
    "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate",
    "pricing_rate_code",
    "pricing_unit",
    "product_instance_type",
    "product_location",
    "product_product_family",
    "product_region_code",
    "product_sku",
    "reservation_effective_cost",
    "reservation_reservation_a_r_n",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_quantity",
    "reservation_unused_recurring_fee",
    "resource_tags",
    "savings_plan_savings_plan_a_r_n",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
)


def _tags_json(value: Any) -> str | None:
    """A resource_tags cell (list of (key, value) pairs from a parquet MAP, a dict, or JSON text
    from a csv export) -> compact JSON object text; empty / missing -> None."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or text == "{}":
            return None
        return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    pairs = dict(value)
    if not pairs:
        return None
    return json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- typed inputs
def _str(df: pd.DataFrame, name: str) -> pd.Series:
    """String column as read ('' -> missing); an absent optional column -> all None (object dtype,
    so comparisons give False, not pd.NA, as NULL comparisons do in a SQL CASE)."""
    if name not in df.columns:
        return pd.Series([None] * len(df), index=df.index, dtype=object)
    s = df[name]
    return s.mask(s == "")


def _num(df: pd.DataFrame, name: str) -> pd.Series:
    """Money / quantity as float64 (text exports: trimmed, '' -> NaN); absent -> NaN."""
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    s = df[name]
    if not pd.api.types.is_numeric_dtype(s):
        s = s.str.strip()
        s = s.mask(s == "")
    return pd.to_numeric(s).astype("float64")


def _ts(df: pd.DataFrame, name: str) -> pd.Series:
    """Naive UTC timestamps (tz-aware or ISO text inputs are converted to UTC first)."""
    if name not in df.columns:
        return pd.Series(pd.NaT, index=df.index, dtype="datetime64[us]")
    s = df[name]
    if not pd.api.types.is_datetime64_any_dtype(s):
        s = s.str.strip()
        s = pd.to_datetime(s.mask(s == ""), utc=True)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s


def _pick(conds: list[Any], choices: list[Any], default: Any = None) -> np.ndarray:
    """np.select for strings, in object dtype so that None stays a null (numpy would otherwise
    pick a fixed-width unicode dtype and write the text 'None')."""
    return np.select(
        [np.asarray(c, dtype=bool) for c in conds],
        [np.asarray(c, dtype=object) for c in choices],
        default=np.asarray(default, dtype=object),
    )


def _pick_num(conds: list[Any], choices: list[Any], default: Any = np.nan) -> np.ndarray:
    """np.select for float64 money / quantities (NaN is the null)."""
    return np.select(
        [np.asarray(c, dtype=bool) for c in conds],
        [np.asarray(c, dtype="float64") for c in choices],
        default=np.asarray(default, dtype="float64"),
    )


def _like(s: pd.Series, fragment: str) -> np.ndarray:
    """SQL `LIKE '%fragment%'` (case-sensitive; NULL -> false)."""
    return s.str.contains(fragment, regex=False, na=False).to_numpy(dtype=bool)


# --------------------------------------------------------------------------- mapping
def map_cur2(df: pd.DataFrame, source: str, billing_period: str, load_id: str) -> pd.DataFrame:
    """Every FOCUS 1.2 column (snake_case, schema order) from a CUR 2.0 frame, in memory."""
    # The raw fields the mapping reads, typed.
    lit = _str(df, "line_item_line_item_type")
    fee = lit.isin(COMMITMENT_FEES).to_numpy()
    # Commitment fee lines become two rows (Purchase + Unused usage): repeat them, flag the copy.
    pos = np.repeat(np.arange(len(df)), np.where(fee, 2, 1))
    unused = pd.Index(pos).duplicated()  # the second copy of a fee line is its Unused row

    def take(s: pd.Series) -> pd.Series:
        return s.iloc[pos].reset_index(drop=True)

    lit = take(lit)
    unblended = take(_num(df, "line_item_unblended_cost"))
    net_unblended = take(_num(df, "line_item_net_unblended_cost"))
    rate = take(_num(df, "line_item_unblended_rate"))
    net_rate = take(_num(df, "line_item_net_unblended_rate"))
    usage_amount = take(_num(df, "line_item_usage_amount"))
    public_od_cost = take(_num(df, "pricing_public_on_demand_cost"))
    public_od_rate = take(_num(df, "pricing_public_on_demand_rate"))
    sp_effective = take(_num(df, "savings_plan_savings_plan_effective_cost"))
    sp_total = take(_num(df, "savings_plan_total_commitment_to_date"))
    sp_used = take(_num(df, "savings_plan_used_commitment"))
    ri_effective = take(_num(df, "reservation_effective_cost"))
    ri_unused_upfront = take(_num(df, "reservation_unused_amortized_upfront_fee_for_billing_period"))
    ri_unused_recurring = take(_num(df, "reservation_unused_recurring_fee"))
    ri_unused_quantity = take(_num(df, "reservation_unused_quantity"))
    sp_arn = take(_str(df, "savings_plan_savings_plan_a_r_n"))
    ri_arn = take(_str(df, "reservation_reservation_a_r_n"))
    usage_type = take(_str(df, "line_item_usage_type"))
    product_code = take(_str(df, "line_item_product_code"))
    product_family = take(_str(df, "product_product_family"))
    currency = take(_str(df, "line_item_currency_code")).str.strip().str.upper()
    pricing_currency = take(_str(df, "pricing_currency")).str.strip().str.upper()
    bill_type = take(_str(df, "bill_bill_type"))
    cr_id = take(_str(df, "capacity_reservation_capacity_reservation_a_r_n"))
    cr_raw_status = take(_str(df, "capacity_reservation_capacity_reservation_status"))

    is_ = lit.isin  # readability: is_(("Tax",)) reads like SQL `lit IN (...)`
    has_sp = sp_arn.notna().to_numpy()
    has_ri = ri_arn.notna().to_numpy()
    sp_line = is_(SP_TYPES).to_numpy()
    ri_line = is_(RI_TYPES).to_numpy()
    ri_fee = (lit == "Fee").to_numpy() & has_ri  # an RI upfront fee

    # ServiceName key: data transfer and EC2 EBS lines are services of their own.
    transfer = (
        _like(usage_type, "DataTransfer") | _like(usage_type, "-Bytes") | (product_family == "Data Transfer")
    )
    ebs = (product_code == "AmazonEC2") & (_like(usage_type, "EBS:") | (product_family == "Storage"))
    svc = pd.Series(_pick([transfer, ebs], ["AWSDataTransfer", "AmazonEBS"], None), dtype=object)
    svc = svc.where(transfer | ebs, product_code)
    service_name = svc.map(SERVICE_NAMES).fillna(svc).fillna("Unknown")
    service_category = svc.map({k: v[0] for k, v in SERVICE_CLASSES.items()}).fillna("Other")
    service_subcategory = svc.map({k: v[1] for k, v in SERVICE_CLASSES.items()}).fillna("Other (Other)")

    cc = pd.Series(
        _pick(
            [
                unused,
                lit == "Tax",
                lit == "Credit",
                lit == "Refund",
                is_(PURCHASE_TYPES),
                is_(USAGE_TYPES) | lit.str.endswith("Discount", na=False),
            ],
            ["Usage", "Tax", "Credit", "Adjustment", "Purchase", "Usage"],
            "Adjustment",
        ),
        dtype=object,
    )
    priced = cc.isin(("Usage", "Purchase")).to_numpy()
    usage = (cc == "Usage").to_numpy()

    sp_unused = sp_total - sp_used
    effective = _pick_num(
        [
            unused & (lit == "SavingsPlanRecurringFee"),
            unused,
            lit == "SavingsPlanCoveredUsage",
            is_(("SavingsPlanNegation", "SavingsPlanUpfrontFee", "SavingsPlanRecurringFee", "RIFee")),
            lit == "DiscountedUsage",
            ri_fee,
        ],
        [
            sp_unused.fillna(unblended),
            ri_unused_upfront.fillna(0) + ri_unused_recurring.fillna(0),
            sp_effective.fillna(0),
            0,
            ri_effective.fillna(0),
            0,
        ],
        unblended,
    )
    raw_unit = take(_str(df, "pricing_unit"))
    focus_unit = raw_unit.map(
        {u: normalize_unit(u) for u in raw_unit.dropna().unique()}
    )  # few distinct units
    unit_or_units = focus_unit.fillna("Units")
    contracted_rate = net_rate.fillna(rate)
    same_ccy = (pricing_currency.isna() | (pricing_currency == currency)).to_numpy()

    billing_entity = take(_str(df, "bill_billing_entity"))
    legal_entity = take(_str(df, "line_item_legal_entity"))
    tags_col = df["resource_tags"] if "resource_tags" in df.columns else pd.Series(None, index=df.index)

    null = pd.array([None] * len(pos), dtype="string")  # FOCUS columns AWS has no value for
    out: dict[str, Any] = {
        "billed_cost": np.where(unused, 0.0, unblended),
        "billing_account_id": take(_str(df, "bill_payer_account_id")),
        "billing_account_name": take(_str(df, "bill_payer_account_name")),
        "billing_currency": currency,
        "billing_period_start": take(_ts(df, "bill_billing_period_start_date")),
        "billing_period_end": take(_ts(df, "bill_billing_period_end_date")),
        "charge_category": cc,
        "charge_class": _pick([lit == "Refund"], ["Correction"]),
        "charge_description": take(_str(df, "line_item_line_item_description")),
        "charge_period_start": take(_ts(df, "line_item_usage_start_date")),
        "charge_period_end": take(_ts(df, "line_item_usage_end_date")),
        "contracted_cost": np.where(unused, 0.0, net_unblended.fillna(unblended)),
        "effective_cost": effective,
        "invoice_issuer_name": "AWS",
        "list_cost": _pick_num(
            [
                unused | (lit == "SavingsPlanNegation"),
                is_(("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage")),
            ],
            [0, public_od_cost.fillna(unblended)],
            unblended,
        ),
        "pricing_quantity": np.where(priced, usage_amount, np.nan),
        "pricing_unit": _pick([priced & usage_amount.notna()], [unit_or_units]),
        "provider_name": "AWS",
        "publisher_name": _pick(
            [billing_entity == "AWS Marketplace"], [legal_entity.fillna("AWS Marketplace")], "AWS"
        ),
        "service_category": service_category,
        "service_name": service_name,
        "availability_zone": take(_str(df, "line_item_availability_zone")),
        "charge_frequency": _pick(
            [
                is_(("RIFee", "SavingsPlanRecurringFee", "Tax")) & ~unused,
                is_(("Fee", "SavingsPlanUpfrontFee", "Credit", "Refund"))
                | bill_type.isin(("Purchase", "Refund")),
            ],
            ["Recurring", "One-Time"],
            "Usage-Based",
        ),
        "invoice_id": take(_str(df, "bill_invoice_id")),
        "service_subcategory": service_subcategory,
        "billing_account_type": null,
        "capacity_reservation_id": cr_id,
        "capacity_reservation_status": _pick(
            [cr_raw_status.str.contains("unused", case=False, regex=False, na=False), cr_id.notna()],
            ["Unused", "Used"],
        ),
        "commitment_discount_category": _pick(
            [sp_line & has_sp, (ri_line | (lit == "Fee")) & has_ri], ["Spend", "Usage"]
        ),
        "commitment_discount_id": _pick([sp_line, ri_line | ri_fee], [sp_arn, ri_arn]),
        "commitment_discount_name": null,
        "commitment_discount_quantity": _pick_num(
            [
                lit == "SavingsPlanCoveredUsage",
                (lit == "SavingsPlanRecurringFee") & unused,
                lit == "SavingsPlanRecurringFee",
                lit == "DiscountedUsage",
                (lit == "RIFee") & unused,
                lit == "RIFee",
            ],
            [sp_effective, sp_unused, sp_total, usage_amount, ri_unused_quantity, usage_amount],
        ),
        "commitment_discount_status": _pick([is_(COMMITTED_USAGE), unused], ["Used", "Unused"]),
        "commitment_discount_type": _pick(
            [sp_line & has_sp, (ri_line | (lit == "Fee")) & has_ri], ["Savings Plan", "Reserved Instance"]
        ),
        "commitment_discount_unit": _pick([sp_line & has_sp, ri_line & has_ri], [currency, "Hours"]),
        "consumed_quantity": np.where(
            usage & ~unused, np.where(lit == "SavingsPlanNegation", 0.0, usage_amount), np.nan
        ),
        "consumed_unit": _pick([usage & ~unused & usage_amount.notna()], [unit_or_units]),
        "contracted_unit_price": _pick_num([unused, priced], [0, contracted_rate]),
        "list_unit_price": _pick_num([unused, priced], [0, public_od_rate]),
        "pricing_category": _pick(
            [
                cc.isin(("Tax", "Credit", "Adjustment")),
                is_(COMMITTED_USAGE),
                is_(COMMITTED_FEES) | ri_fee,
                _like(usage_type, "SpotUsage"),
            ],
            [None, "Committed", "Committed", "Dynamic"],
            "Standard",
        ),
        "pricing_currency": pricing_currency.fillna(currency),
        "pricing_currency_contracted_unit_price": _pick_num(
            [same_ccy & unused, same_ccy & priced], [0, contracted_rate]
        ),
        "pricing_currency_effective_cost": np.where(same_ccy, effective, np.nan),
        "pricing_currency_list_unit_price": _pick_num(
            [same_ccy & unused, same_ccy & priced], [0, public_od_rate]
        ),
        "region_id": take(_str(df, "product_region_code")),
        "region_name": take(_str(df, "product_location")),
        "resource_id": take(_str(df, "line_item_resource_id")),
        "resource_name": null,
        "resource_type": null,
        "sku_id": take(_str(df, "product_sku")),
        "sku_meter": usage_type,
        "sku_price_details": null,
        "sku_price_id": take(_str(df, "pricing_rate_code")),
        "sub_account_id": take(_str(df, "line_item_usage_account_id")),
        "sub_account_name": take(_str(df, "line_item_usage_account_name")),
        "sub_account_type": null,
        "tags": take(pd.Series([_tags_json(t) for t in tags_col], index=df.index, dtype=object)),
        "x_source": source,
        "x_billing_period": billing_period,
        "x_provider": "aws",
        "x_usage_type": usage_type,
        "x_operation": take(_str(df, "line_item_operation")),
        "x_charge_type": lit,
        "x_instance_type": take(_str(df, "product_instance_type")),
        "x_load_id": load_id,
    }
    return pd.DataFrame(out, index=pd.RangeIndex(len(pos)))  # scalars (constants, None) broadcast


def run(
    path: str, out: str, *, source: str = "bench", billing_period: str = "2025-01", load_id: str = "bench"
) -> dict[str, Any]:
    """Read one CUR 2.0 parquet file with pandas, map it, write the FOCUS parquet: the whole
    pandas path bench/ingest.py times (seconds, rows, float billed total); the caller adds peak RSS."""
    t = time.perf_counter()
    present = set(pq.read_schema(path).names)  # optional columns an export may leave out
    df = pd.read_parquet(path, columns=[c for c in RAW_COLUMNS if c in present])
    focus = map_cur2(df, source, billing_period, load_id)
    focus.to_parquet(out, index=False)
    return {
        "seconds": time.perf_counter() - t,
        "rows": len(focus),
        "billed": float(focus["billed_cost"].sum()),
    }
