"""Realistic, deterministic AWS CUR 2.0 generator (tests, demo and benchmark use it).

One payer with several linked accounts; GPU instances (p4d / p5 / g5 / g6) on-demand and
spot, SageMaker, S3 and EBS storage, data-transfer egress; Savings Plans (covered usage +
paired negation, daily recurring fee, upfront fee), RIs (discounted usage, RIFee, upfront
Fee), credits, refunds, tax, bundled discount; tagged and untagged resources.

Every amount is an integer number of 1e-8 currency units, so the expected totals are exact
(`PeriodTotals`), and a double in the parquet converts back to the same decimal. Rows are
written in row-group chunks with pyarrow's ParquetWriter: 10M rows need ~a few hundred MB.

Layout written (CUR 2.0 / Data Exports):
  <prefix>/data/BILLING_PERIOD=YYYY-MM/<execution_id>/<export>-00001.snappy.parquet
  <prefix>/metadata/BILLING_PERIOD=YYYY-MM/<export>-Manifest.json   (written after the data)
Legacy CUR:
  <prefix>/<YYYYMMDD-YYYYMMDD>/<assemblyId>/<report>-00001.csv.gz (or .snappy.parquet)
  <prefix>/<YYYYMMDD-YYYYMMDD>/<report>-Manifest.json  (+ a copy in the assembly folder)
"""

from __future__ import annotations

import calendar
import gzip
import hashlib
import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

UNIT = Decimal("0.00000001")  # all amounts are integer multiples of 1e-8
PAYER = ("111111111111", "acme-payer")
ACCOUNTS = (
    ("222222222222", "ml-research"),
    ("333333333333", "ml-prod"),
    ("444444444444", "data-platform"),
    ("555555555555", "sandbox"),
)
REGIONS = (
    ("us-east-1", "US East (N. Virginia)", "USE1", "us-east-1a"),
    ("us-west-2", "US West (Oregon)", "USW2", "us-west-2b"),
)
SP_ARN = "arn:aws:savingsplans::111111111111:savingsplan/5f2c9a4e-0d1b-4c3e-9a7f-1b2c3d4e5f60"
RI_ARN = "arn:aws:ec2:us-east-1:111111111111:reserved-instances/7c1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"
TEAMS = ("ml-research", "ml-prod", "data", "platform")
PROJECTS = ("llm-pretrain", "vision", "recsys", "etl", "notebooks")

# (kind name, weight, product code, usage-type pattern, operation, instance type, hourly OD rate (1e-4 units),
#  unit, product family, purchase: od|spot|sp|ri|store|egress)
_KINDS: tuple[tuple[Any, ...], ...] = (
    (
        "p4d_od",
        6,
        "AmazonEC2",
        "{r}-BoxUsage:p4d.24xlarge",
        "RunInstances",
        "p4d.24xlarge",
        327726,
        "Hrs",
        "Compute Instance",
        "od",
    ),
    (
        "p5_od",
        4,
        "AmazonEC2",
        "{r}-BoxUsage:p5.48xlarge",
        "RunInstances",
        "p5.48xlarge",
        982400,
        "Hrs",
        "Compute Instance",
        "od",
    ),
    (
        "g5_od",
        10,
        "AmazonEC2",
        "{r}-BoxUsage:g5.2xlarge",
        "RunInstances",
        "g5.2xlarge",
        12120,
        "Hrs",
        "Compute Instance",
        "od",
    ),
    (
        "g6_od",
        8,
        "AmazonEC2",
        "{r}-BoxUsage:g6.xlarge",
        "RunInstances",
        "g6.xlarge",
        8048,
        "Hrs",
        "Compute Instance",
        "od",
    ),
    (
        "p4d_spot",
        4,
        "AmazonEC2",
        "{r}-SpotUsage:p4d.24xlarge",
        "RunInstances:SV001",
        "p4d.24xlarge",
        327726,
        "Hrs",
        "Compute Instance",
        "spot",
    ),
    (
        "g5_spot",
        10,
        "AmazonEC2",
        "{r}-SpotUsage:g5.2xlarge",
        "RunInstances:SV001",
        "g5.2xlarge",
        12120,
        "Hrs",
        "Compute Instance",
        "spot",
    ),
    (
        "g6_spot",
        8,
        "AmazonEC2",
        "{r}-SpotUsage:g6.xlarge",
        "RunInstances:SV001",
        "g6.xlarge",
        8048,
        "Hrs",
        "Compute Instance",
        "spot",
    ),
    (
        "p5_sp",
        8,
        "AmazonEC2",
        "{r}-BoxUsage:p5.48xlarge",
        "RunInstances",
        "p5.48xlarge",
        982400,
        "Hrs",
        "Compute Instance",
        "sp",
    ),
    (
        "g5_ri",
        8,
        "AmazonEC2",
        "{r}-BoxUsage:g5.2xlarge",
        "RunInstances",
        "g5.2xlarge",
        12120,
        "Hrs",
        "Compute Instance",
        "ri",
    ),
    (
        "sagemaker",
        5,
        "AmazonSageMaker",
        "{r}-Train:ml.g5.2xlarge",
        "CreateTrainingJob",
        "ml.g5.2xlarge",
        15150,
        "Hrs",
        "ML Instance",
        "od",
    ),
    (
        "s3",
        10,
        "AmazonS3",
        "{r}-TimedStorage-ByteHrs",
        "StandardStorage",
        "",
        230,
        "GB-Mo",
        "Storage",
        "store",
    ),
    (
        "ebs",
        9,
        "AmazonEC2",
        "{r}-EBS:VolumeUsage.gp3",
        "CreateVolume-Gp3",
        "",
        800,
        "GB-Mo",
        "Storage",
        "store",
    ),
    (
        "egress",
        10,
        "AWSDataTransfer",
        "{r}-DataTransfer-Out-Bytes",
        "",
        "",
        900,
        "GB",
        "Data Transfer",
        "egress",
    ),
)
_PURCHASE = {"od": 0, "spot": 1, "sp": 2, "ri": 3, "store": 4, "egress": 5}
P_OD, P_SPOT, P_SP, P_RI = 0, 1, 2, 3
LT_USAGE = ("Usage", "SavingsPlanCoveredUsage", "SavingsPlanNegation", "DiscountedUsage")
SPOT_DISCOUNT = 65  # spot price = 35% of on-demand
SP_DISCOUNT = 28  # SP effective = 72% of on-demand
RI_DISCOUNT = 40

# CUR 2.0 columns we write, with arrow types (a realistic subset of the ~125 columns).
STR = pa.string()
F64 = pa.float64()
TS = pa.timestamp("ms")
MAP = pa.map_(pa.string(), pa.string())
CUR2_SCHEMA = pa.schema(
    [
        ("identity_line_item_id", STR),
        ("identity_time_interval", STR),
        ("bill_invoice_id", STR),
        ("bill_invoicing_entity", STR),
        ("bill_billing_entity", STR),
        ("bill_bill_type", STR),
        ("bill_payer_account_id", STR),
        ("bill_payer_account_name", STR),
        ("bill_billing_period_start_date", TS),
        ("bill_billing_period_end_date", TS),
        ("line_item_usage_account_id", STR),
        ("line_item_usage_account_name", STR),
        ("line_item_line_item_type", STR),
        ("line_item_usage_start_date", TS),
        ("line_item_usage_end_date", TS),
        ("line_item_product_code", STR),
        ("line_item_usage_type", STR),
        ("line_item_operation", STR),
        ("line_item_availability_zone", STR),
        ("line_item_resource_id", STR),
        ("line_item_usage_amount", F64),
        ("line_item_currency_code", STR),
        ("line_item_unblended_rate", STR),
        ("line_item_unblended_cost", F64),
        ("line_item_blended_cost", F64),
        ("line_item_net_unblended_cost", F64),
        ("line_item_line_item_description", STR),
        ("line_item_legal_entity", STR),
        ("line_item_tax_type", STR),
        ("product_product_family", STR),
        ("product_instance_type", STR),
        ("product_region_code", STR),
        ("product_location", STR),
        ("product_servicecode", STR),
        ("product_sku", STR),
        ("product", MAP),
        ("pricing_unit", STR),
        ("pricing_term", STR),
        ("pricing_rate_code", STR),
        ("pricing_currency", STR),
        ("pricing_public_on_demand_cost", F64),
        ("pricing_public_on_demand_rate", STR),
        ("reservation_reservation_a_r_n", STR),
        ("reservation_effective_cost", F64),
        ("reservation_unused_amortized_upfront_fee_for_billing_period", F64),
        ("reservation_unused_recurring_fee", F64),
        ("reservation_unused_quantity", F64),
        ("reservation_start_time", STR),
        ("reservation_end_time", STR),
        ("savings_plan_savings_plan_a_r_n", STR),
        ("savings_plan_savings_plan_effective_cost", F64),
        ("savings_plan_total_commitment_to_date", F64),
        ("savings_plan_used_commitment", F64),
        ("savings_plan_start_time", STR),
        ("savings_plan_end_time", STR),
        ("resource_tags", MAP),
        ("cost_category", MAP),
    ]
)
MONEY_COLS = (
    "line_item_unblended_cost",
    "line_item_blended_cost",
    "line_item_net_unblended_cost",
    "pricing_public_on_demand_cost",
    "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
)


@dataclass
class PeriodTotals:
    """Exact expected figures for one generated billing period (the invoice view)."""

    period: str
    rows: int = 0
    billed: int = 0  # sum(line_item_unblended_cost) in 1e-8 units
    effective: int = 0  # sum of the amortised EffectiveCost per the FOCUS mapping
    by_type: dict[str, int] = field(default_factory=dict)  # line item type -> billed units
    rows_by_type: dict[str, int] = field(default_factory=dict)

    @property
    def billed_total(self) -> Decimal:
        return Decimal(self.billed) * UNIT

    @property
    def effective_total(self) -> Decimal:
        return Decimal(self.effective) * UNIT

    @property
    def focus_rows(self) -> int:
        """FOCUS rows these raw lines become: each commitment fee line (SavingsPlanRecurringFee,
        RIFee) is a Purchase row plus an Unused usage row (see finops.focus.aws_cur_mapping)."""
        from finops.focus.aws_cur_mapping import COMMITMENT_FEES

        return self.rows + sum(self.rows_by_type.get(t, 0) for t in COMMITMENT_FEES)

    def add(self, line_type: str, billed: int, effective: int, rows: int = 1) -> None:
        self.rows += rows
        self.billed += billed
        self.effective += effective
        self.by_type[line_type] = self.by_type.get(line_type, 0) + billed
        self.rows_by_type[line_type] = self.rows_by_type.get(line_type, 0) + rows


@dataclass(frozen=True)
class Spike:
    """A cost spike: `share` of one account's rows of one kind (a `_KINDS` name, e.g. p5_od),
    optionally only those tagged for one team, all land on one day of the month (0-based; -1 =
    the last day). Rows move, none are added, so the period's totals stay what they were and exact."""

    kind: str
    account: int | None  # index into ACCOUNTS; None: every account
    share: float
    day: int = -1
    team: int | None = None  # index into TEAMS


@dataclass
class GenSpec:
    """What to generate for one billing period."""

    period: str  # YYYY-MM
    rows: int = 10_000  # approximate: usage rows + the period's commitment / tax / credit rows
    seed: int = 42
    currency: str = "USD"
    chunk_rows: int = 250_000
    include_purchases: bool = True  # SP / RI upfront fees (the purchase month)
    restatement: int = 0  # > 0: a restated delivery (other numbers) for the same period
    extra_tags: dict[str, str] = field(default_factory=dict)  # added to the first tagged rows (hostile tests)
    tagged_share: float = 0.75
    spike: Spike | None = None  # the demo's anomaly
    # the RI's reservation_end_time (exclusive); None: 31 days after this period ends. The SP
    # ends 35 days after it; both are 1-year terms (start = end - 365 days).
    ri_end: datetime | None = None

    @property
    def start(self) -> datetime:
        y, m = map(int, self.period.split("-"))
        return datetime(y, m, 1, tzinfo=UTC).replace(tzinfo=None)  # naive UTC, as CUR timestamps

    @property
    def end(self) -> datetime:
        y, m = map(int, self.period.split("-"))
        return datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC).replace(tzinfo=None)

    @property
    def days(self) -> int:
        y, m = map(int, self.period.split("-"))
        return calendar.monthrange(y, m)[1]

    @property
    def execution_id(self) -> str:
        return str(
            uuid.UUID(hashlib.md5(f"{self.period}:{self.seed}:{self.restatement}".encode()).hexdigest())
        )


def _f(units: np.ndarray) -> np.ndarray:
    return units.astype(np.float64) / 1e8


def _take(values: list[str], idx: np.ndarray) -> pa.Array:
    """Strings by index from a small dictionary (Arrow C++ take: fast, no Python per row)."""
    return pa.array(values, STR).take(pa.array(np.asarray(idx, dtype=np.int64)))


def _const(value: str, n: int) -> pa.Array:
    return pa.array([value], STR).take(pa.array(np.zeros(n, dtype=np.int64)))


SERVICE_LABELS = {
    "AmazonEC2": "Amazon Elastic Compute Cloud",
    "AmazonS3": "Amazon Simple Storage Service",
    "AWSDataTransfer": "AWS Data Transfer",
    "AmazonSageMaker": "Amazon SageMaker",
}


def _int_bincount(idx: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Exact integer per-bucket sums (np.bincount would go through float64)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, idx, weights.astype(np.int64))
    return out


def _money_float(units: int) -> float:
    return units / 1e8


class _Gen:
    def __init__(self, spec: GenSpec, totals: PeriodTotals | None = None):
        self.spec = spec
        self.rng = np.random.default_rng([spec.seed, int(spec.period.replace("-", "")), spec.restatement])
        self.totals = totals if totals is not None else PeriodTotals(spec.period)
        self.sp_used_by_day = np.zeros(spec.days, dtype=np.int64)
        self.ri_hours = 0
        self.ri_effective = 0
        self.seq = 0
        self.invoice = f"EUINUS{spec.period.replace('-', '')}{spec.seed % 1000:03d}"

    # -- usage rows (vectorised) ---------------------------------------------------
    def usage_chunk(self, n: int, build: bool = True) -> pa.Table | None:
        s, rng = self.spec, self.rng
        w = np.array([kd[1] for kd in _KINDS], dtype=np.float64)
        k = rng.choice(len(_KINDS), size=n, p=w / w.sum())
        kind_purchase = np.array([_PURCHASE[kd[9]] for kd in _KINDS], dtype=np.int64)
        # SP covered rows get a paired negation right after them (same resource, same hour).
        pos = np.arange(n)
        sp_pos = np.flatnonzero((kind_purchase[k] == P_SP) & (pos % 2 == 0) & (pos + 1 < n))
        k[sp_pos + 1] = k[sp_pos]
        purchase = kind_purchase[k]
        is_neg = np.zeros(n, dtype=bool)
        is_neg[sp_pos + 1] = True
        is_cov = np.zeros(n, dtype=bool)
        is_cov[sp_pos] = True
        purchase = np.where((purchase == P_SP) & ~is_neg & ~is_cov, P_OD, purchase)  # no room for a pair

        acct = rng.integers(0, len(ACCOUNTS), size=n)
        reg = rng.integers(0, len(REGIONS), size=n)
        reg[purchase == P_RI] = 0  # the RI is zonal in us-east-1
        day = rng.integers(0, s.days, size=n)
        hour = rng.integers(0, 24, size=n)
        res_num = rng.integers(0, 5000, size=n)
        if s.spike is not None:
            kind_idx = next(i for i, kd in enumerate(_KINDS) if kd[0] == s.spike.kind)
            moved = (k == kind_idx) & (res_num % 1000 < int(s.spike.share * 1000))
            if s.spike.account is not None:
                moved &= acct == s.spike.account
            if s.spike.team is not None:  # tagged (as _usage_table decides) and for that team
                team_of = (res_num + acct) % len(TEAMS)
                moved &= (res_num % 100 < int(s.tagged_share * 100)) & (team_of == s.spike.team)
            day[moved] = s.spike.day % s.days
        for arr in (acct, reg, day, hour, res_num):
            arr[sp_pos + 1] = arr[sp_pos]
        rate = np.array([kd[6] for kd in _KINDS], dtype=np.int64)[k]  # 1e-4 units
        hourly = np.array([kd[7] == "Hrs" for kd in _KINDS])[k]
        # amount in 1e-4 units: hours 0.25..1, GB 0.0001..500
        amount = np.where(
            hourly, rng.integers(2500, 10001, size=n), rng.integers(1, 5_000_000, size=n)
        ).astype(np.int64)
        if s.restatement:
            amount = amount + (amount * s.restatement) // 50  # restated deliveries re-rate usage
        amount[sp_pos + 1] = amount[sp_pos]
        od = rate * amount  # 1e-8 units
        spot = od * (100 - SPOT_DISCOUNT) // 100
        unblended = np.where(purchase == P_SPOT, spot, od)
        unblended = np.where(purchase == P_RI, 0, unblended)
        unblended = np.where(is_neg, -od, unblended)
        lt = np.zeros(n, dtype=np.int64)  # index into LT_USAGE
        lt[is_cov] = 1
        lt[is_neg] = 2
        lt[purchase == P_RI] = 3
        sp_eff = np.where(lt == 1, od * (100 - SP_DISCOUNT) // 100, 0)
        ri_eff = np.where(lt == 3, od * (100 - RI_DISCOUNT) // 100, 0)
        effective = np.where(lt == 1, sp_eff, np.where(lt == 3, ri_eff, np.where(is_neg, 0, unblended)))
        public_od = np.where(is_neg, 0, od)

        self.sp_used_by_day += _int_bincount(day[lt == 1], sp_eff[lt == 1], s.days)
        self.ri_effective += int(ri_eff.sum())
        for i, t in enumerate(LT_USAGE):
            m = lt == i
            if m.any():
                self.totals.add(t, int(unblended[m].sum()), int(effective[m].sum()), rows=int(m.sum()))

        if not build:
            return None
        return self._usage_table(
            n, k, acct, reg, day, hour, res_num, amount, purchase, lt, unblended, public_od, sp_eff, ri_eff
        )

    def _usage_table(
        self,
        n,
        k,
        acct,
        reg,
        day,
        hour,
        res_num,
        amount,
        purchase,
        lt_idx,
        unblended,
        public_od,
        sp_eff,
        ri_eff,
    ) -> pa.Table:
        """Build the arrow table with dictionary takes (C++), never per-row Python strings."""
        s = self.spec
        nk, nr = len(_KINDS), len(REGIONS)
        start_ms = np.datetime64(s.start, "ms") + (
            day.astype("timedelta64[D]") + hour.astype("timedelta64[h]")
        )
        end_ms = start_ms + np.timedelta64(1, "h")
        kr = k * nr + reg
        usage_types = [kd[3].replace("{r}", r[2]) for kd in _KINDS for r in REGIONS]
        codes = [kd[2] for kd in _KINDS]
        is_ebs = np.array(["EBS" in kd[3] for kd in _KINDS])[k]
        is_instance = np.array([kd[5] != "" for kd in _KINDS])[k]
        # resource ids: prefix by kind (0 instance, 1 volume, 2 bucket, 3 none) x 5000 numbers
        pref_kind = np.where(np.array([kd[2] == "AmazonS3" for kd in _KINDS])[k], 2, np.where(is_ebs, 1, 0))
        pref_kind = np.where(np.array([kd[2] == "AWSDataTransfer" for kd in _KINDS])[k], 3, pref_kind)
        res_dict = [f"{p}{i:08d}" for p in ("i-0f", "vol-0a", "acme-bucket-") for i in range(5000)] + [""]
        res_idx = np.where(pref_kind == 3, 3 * 5000, pref_kind * 5000 + res_num)
        az_idx = np.where(is_instance | is_ebs, reg, nr)
        lt_names = list(LT_USAGE)
        # description: per (line type, kind, region, account)
        desc_dict = []
        for lt in lt_names:
            for kd in _KINDS:
                for r in REGIONS:
                    ut = kd[3].replace("{r}", r[2])
                    if lt == "SavingsPlanNegation":
                        desc_dict.append(f"SavingsPlanNegation used by AccountId : {{acct}} for {ut}")
                    elif kd[9] == "spot" and lt == "Usage":
                        desc_dict.append(
                            f"${kd[6] * (100 - SPOT_DISCOUNT) / 1e6:.4f} per Spot {kd[5]} Linux Instance hour"
                        )
                    elif lt == "DiscountedUsage":
                        desc_dict.append(f"USD 0.0 hourly fee per Linux {kd[5]}")
                    else:
                        desc_dict.append(f"${kd[6] / 1e4:.4f} per On Demand {ut}")
        desc_dict = [d.replace("{acct}", ACCOUNTS[0][0]) for d in desc_dict]
        desc_idx = (lt_idx * nk + k) * nr + reg
        rate = np.array([kd[6] for kd in _KINDS], dtype=np.int64)
        rate_strs = [f"{r / 1e4:.4f}" for r in rate]
        spot_strs = [f"{r * (100 - SPOT_DISCOUNT) / 100 / 1e4:.4f}" for r in rate]
        eff_rate_dict = rate_strs + spot_strs + ["0.0"]
        eff_rate_idx = np.where(purchase == P_SPOT, nk + k, np.where(purchase == P_RI, 2 * nk, k))
        term_idx = np.where(purchase == P_SPOT, 0, np.where(purchase == P_RI, 1, 2))
        tagged = (res_num % 100) < int(s.tagged_share * 100)
        team_idx = (res_num + acct) % len(TEAMS)
        proj_idx = res_num % len(PROJECTS)
        env_idx = (res_num % 3 == 0).astype(np.int64)
        ntags = np.where(tagged, 3, 0)
        extra_rows = np.flatnonzero(tagged)[:50] if s.extra_tags else np.array([], dtype=np.int64)
        ntags[extra_rows] += len(s.extra_tags)
        offsets = np.zeros(n + 1, dtype=np.int32)
        offsets[1:] = np.cumsum(ntags)
        total = int(offsets[-1])
        key_dict = ["user_team", "user_project", "user_env", *s.extra_tags.keys()]
        val_dict = [*TEAMS, *PROJECTS, "prod", "dev", *s.extra_tags.values()]
        kidx = np.zeros(total, dtype=np.int64)
        vidx = np.zeros(total, dtype=np.int64)
        idx = np.flatnonzero(tagged)
        b = offsets[idx]
        kidx[b], vidx[b] = 0, team_idx[idx]
        kidx[b + 1], vidx[b + 1] = 1, len(TEAMS) + proj_idx[idx]
        kidx[b + 2], vidx[b + 2] = 2, len(TEAMS) + len(PROJECTS) + env_idx[idx]
        for j in range(len(s.extra_tags)):
            kidx[offsets[extra_rows] + 3 + j] = 3 + j
            vidx[offsets[extra_rows] + 3 + j] = len(TEAMS) + len(PROJECTS) + 2 + j
        tags = pa.MapArray.from_arrays(pa.array(offsets), _take(key_dict, kidx), _take(val_dict, vidx))
        prod_offsets = np.arange(0, 2 * n + 1, 2, dtype=np.int32)
        pk = np.tile(np.array([0, 1]), n)
        pv = np.repeat(k, 2)
        product = pa.MapArray.from_arrays(
            pa.array(prod_offsets),
            _take(["product_name", "servicename"], pk),
            _take([SERVICE_LABELS.get(c, c) for c in codes], pv),
        )
        sku_dict = [f"SKU{(i * 7919) % 100000:08d}" for i in range(nk)]
        spn = (lt_idx == 1) | (lt_idx == 2)
        cols: dict[str, Any] = {
            "identity_line_item_id": self._ids(n),
            "identity_time_interval": _const(f"{s.start:%Y-%m-%dT%H:%M:%SZ}/{s.end:%Y-%m-%dT%H:%M:%SZ}", n),
            "bill_invoice_id": _const(self.invoice, n),
            "bill_invoicing_entity": _const("Amazon Web Services, Inc.", n),
            "bill_billing_entity": _const("AWS", n),
            "bill_bill_type": _const("Anniversary", n),
            "bill_payer_account_id": _const(PAYER[0], n),
            "bill_payer_account_name": _const(PAYER[1], n),
            "bill_billing_period_start_date": pa.array(np.full(n, np.datetime64(s.start, "ms")), TS),
            "bill_billing_period_end_date": pa.array(np.full(n, np.datetime64(s.end, "ms")), TS),
            "line_item_usage_account_id": _take([a[0] for a in ACCOUNTS], acct),
            "line_item_usage_account_name": _take([a[1] for a in ACCOUNTS], acct),
            "line_item_line_item_type": _take(lt_names, lt_idx),
            "line_item_usage_start_date": pa.array(start_ms, TS),
            "line_item_usage_end_date": pa.array(end_ms, TS),
            "line_item_product_code": _take(codes, k),
            "line_item_usage_type": _take(usage_types, kr),
            "line_item_operation": _take([kd[4] for kd in _KINDS], k),
            "line_item_availability_zone": _take([r[3] for r in REGIONS] + [""], az_idx),
            "line_item_resource_id": _take(res_dict, res_idx),
            "line_item_usage_amount": pa.array(amount / 1e4, F64),
            "line_item_currency_code": _const(s.currency, n),
            "line_item_unblended_rate": _take(eff_rate_dict, eff_rate_idx),
            "line_item_unblended_cost": pa.array(_f(unblended), F64),
            "line_item_blended_cost": pa.array(_f(unblended), F64),
            "line_item_net_unblended_cost": pa.array(_f(unblended), F64),
            "line_item_line_item_description": _take(desc_dict, desc_idx),
            "line_item_legal_entity": _const("Amazon Web Services, Inc.", n),
            "line_item_tax_type": _const("", n),
            "product_product_family": _take([kd[8] for kd in _KINDS], k),
            "product_instance_type": _take([kd[5] for kd in _KINDS], k),
            "product_region_code": _take([r[0] for r in REGIONS], reg),
            "product_location": _take([r[1] for r in REGIONS], reg),
            "product_servicecode": _take(codes, k),
            "product_sku": _take(sku_dict, k),
            "product": product,
            "pricing_unit": _take([kd[7] for kd in _KINDS], k),
            "pricing_term": _take(["", "Reserved", "OnDemand"], term_idx),
            "pricing_rate_code": _take([f"{x}.JRTCKXETXF.6YS6EN2CT7" for x in sku_dict], k),
            "pricing_currency": _const("USD", n),
            "pricing_public_on_demand_cost": pa.array(_f(public_od), F64),
            "pricing_public_on_demand_rate": _take(rate_strs, k),
            "reservation_reservation_a_r_n": _take(["", RI_ARN], (lt_idx == 3).astype(np.int64)),
            "reservation_effective_cost": pa.array(_f(ri_eff), F64),
            "reservation_unused_amortized_upfront_fee_for_billing_period": pa.array(np.zeros(n), F64),
            "reservation_unused_recurring_fee": pa.array(np.zeros(n), F64),
            "reservation_unused_quantity": pa.array(np.zeros(n), F64),
            "savings_plan_savings_plan_a_r_n": _take(["", SP_ARN], spn.astype(np.int64)),
            "savings_plan_savings_plan_effective_cost": pa.array(_f(sp_eff), F64),
            "savings_plan_total_commitment_to_date": pa.array(np.zeros(n), F64),
            "savings_plan_used_commitment": pa.array(np.zeros(n), F64),
            "resource_tags": tags,
            "cost_category": pa.MapArray.from_arrays(
                pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], STR), pa.array([], STR)
            ),
        }
        return self._table(cols)

    def _ids(self, n: int) -> np.ndarray:
        start = self.seq
        self.seq += n
        import pyarrow.compute as pc

        h = hashlib.sha1(f"{self.spec.period}:{self.spec.seed}:{self.spec.restatement}".encode()).hexdigest()[
            :10
        ]
        nums = pc.utf8_lpad(
            pc.cast(pa.array(np.arange(start + 10**11, start + n + 10**11, dtype=np.int64)), STR), 12, "0"
        )
        return pc.binary_join_element_wise(_const(h, n), nums, "")

    def _table(self, cols: dict[str, Any]) -> pa.Table:
        arrays = []
        n = len(cols["identity_line_item_id"])
        for f in CUR2_SCHEMA:
            v = cols.get(f.name, pa.nulls(n, f.type))  # e.g. the commitment times on usage rows
            arrays.append(v if isinstance(v, pa.Array) else pa.array(v, type=f.type))
        return pa.Table.from_arrays(arrays, schema=CUR2_SCHEMA)

    # -- period rows (commitments, tax, credits ...) -------------------------------
    def period_rows(self) -> pa.Table:
        s = self.spec
        rows: list[dict[str, Any]] = []

        def row(
            line_type: str, billed: int, effective: int, *, day: int = 0, hours: int = 24 * 1, **kw: Any
        ) -> None:
            start = s.start + timedelta(days=day)
            end = start + timedelta(hours=hours)
            acct = kw.pop("account", ACCOUNTS[0])
            r = {
                "line_item_line_item_type": line_type,
                "line_item_unblended_cost": billed,
                "line_item_usage_start_date": start,
                "line_item_usage_end_date": min(end, s.end),
                "line_item_usage_account_id": acct[0],
                "line_item_usage_account_name": acct[1],
                **kw,
            }
            rows.append(r)
            self.totals.add(line_type, billed, effective)

        ri_end = s.ri_end or s.end + timedelta(days=31)
        sp_end = ri_end + timedelta(days=35)

        def iso(t: datetime) -> str:  # CUR 2.0 ships these as text
            return f"{t:%Y-%m-%dT%H:%M:%S.000Z}"

        sp_times: dict[str, Any] = {
            "savings_plan_start_time": iso(sp_end - timedelta(days=365)),
            "savings_plan_end_time": iso(sp_end),
        }
        ri_times: dict[str, Any] = {
            "reservation_start_time": iso(ri_end - timedelta(days=365)),
            "reservation_end_time": iso(ri_end),
        }
        # Savings Plan: daily recurring fee = commitment; unused = commitment - used that day
        for d in range(s.days):
            used = int(self.sp_used_by_day[d])
            commitment = max(used * 115 // 100, 240_000_000_000)  # >= $2,400/day
            row(
                "SavingsPlanRecurringFee",
                commitment,
                commitment - used,
                day=d,
                line_item_product_code="ComputeSavingsPlans",
                line_item_usage_type="ComputeSP:1yrNoUpfront",
                line_item_line_item_description="1 year No Upfront Compute Savings Plan",
                savings_plan_savings_plan_a_r_n=SP_ARN,
                savings_plan_total_commitment_to_date=commitment,
                savings_plan_used_commitment=used,
                line_item_usage_amount=24 * 10**8,
                pricing_unit="Hrs",
                **sp_times,
            )
        if s.include_purchases:
            row(
                "SavingsPlanUpfrontFee",
                1_500_000_000_000,
                0,
                hours=1,
                line_item_product_code="ComputeSavingsPlans",
                line_item_usage_type="ComputeSP:3yrPartialUpfront",
                line_item_line_item_description="Upfront fee for Savings Plan",
                bill_bill_type="Purchase",
                savings_plan_savings_plan_a_r_n=SP_ARN,
                line_item_usage_amount=10**8,
            )
            row(
                "Fee",
                900_000_000_000,
                0,
                hours=1,
                line_item_product_code="AmazonEC2",
                line_item_usage_type="USE1-HeavyUsage:g5.2xlarge",
                bill_bill_type="Purchase",
                line_item_line_item_description="Sign up charge for subscription: 12345, planId: 678",
                reservation_reservation_a_r_n=RI_ARN,
                line_item_usage_amount=10**8,
            )
        # RIFee: monthly recurring; unused part = 6% of the month's RI value
        ri_fee = max(self.ri_effective // 2, 100_000_000_000)
        unused_upfront = ri_fee * 3 // 100
        unused_recurring = ri_fee * 3 // 100
        row(
            "RIFee",
            ri_fee,
            unused_upfront + unused_recurring,
            hours=24 * s.days,
            line_item_product_code="AmazonEC2",
            line_item_usage_type="USE1-HeavyUsage:g5.2xlarge",
            line_item_line_item_description="USD 0.73 hourly fee per Linux g5.2xlarge",
            reservation_reservation_a_r_n=RI_ARN,
            reservation_unused_amortized_upfront_fee_for_billing_period=unused_upfront,
            reservation_unused_recurring_fee=unused_recurring,
            reservation_unused_quantity=int(24 * 10**8),
            line_item_usage_amount=24 * s.days * 10**8,
            pricing_unit="Hrs",
            **ri_times,
        )
        for i, acct in enumerate(ACCOUNTS):
            credit = -(2_500_000_000 + i * 1_234_567_891)
            row(
                "Credit",
                credit,
                credit,
                hours=24 * s.days,
                account=acct,
                line_item_product_code="AmazonEC2",
                line_item_line_item_description="AWS Activate credits",
            )
            tax = 1_234_567_800 * (i + 1) + int(self.totals.billed // 1000)
            row(
                "Tax",
                tax,
                tax,
                hours=24 * s.days,
                account=acct,
                line_item_product_code="AmazonEC2",
                line_item_tax_type="Sales",
                line_item_line_item_description="Tax for product code AmazonEC2",
            )
        row(
            "Refund",
            -1_999_000_000,
            -1_999_000_000,
            day=3,
            account=ACCOUNTS[1],
            line_item_product_code="AmazonS3",
            bill_bill_type="Refund",
            line_item_line_item_description="Refund for overcharged storage",
        )
        row(
            "BundledDiscount",
            -512_345_678,
            -512_345_678,
            day=1,
            account=ACCOUNTS[2],
            line_item_product_code="AWSDataTransfer",
            line_item_usage_type="USE1-DataTransfer-Out-Bytes",
            line_item_line_item_description="Free tier bundled discount",
        )

        n = len(rows)
        ids = self._ids(n)
        cols: dict[str, Any] = {}
        for f in CUR2_SCHEMA:
            name = f.name
            if name in ("resource_tags", "cost_category", "product"):
                cols[name] = pa.MapArray.from_arrays(
                    pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], STR), pa.array([], STR)
                )
                continue
            vals = [r.get(name) for r in rows]
            if name in MONEY_COLS:
                cols[name] = [_money_float(v) if v is not None else 0.0 for v in vals]
            elif name == "line_item_usage_amount":
                cols[name] = [(v / 1e8) if v is not None else 0.0 for v in vals]
            elif f.type == F64:
                cols[name] = [0.0 if v is None else float(v) / 1e8 for v in vals]
            else:
                cols[name] = vals
        defaults = {
            "identity_line_item_id": list(ids),
            "identity_time_interval": f"{s.start:%Y-%m-%dT%H:%M:%SZ}/{s.end:%Y-%m-%dT%H:%M:%SZ}",
            "bill_invoice_id": self.invoice,
            "bill_invoicing_entity": "Amazon Web Services, Inc.",
            "bill_billing_entity": "AWS",
            "bill_bill_type": "Anniversary",
            "bill_payer_account_id": PAYER[0],
            "bill_payer_account_name": PAYER[1],
            "bill_billing_period_start_date": s.start,
            "bill_billing_period_end_date": s.end,
            "line_item_currency_code": s.currency,
            "pricing_currency": "USD",
            "line_item_legal_entity": "Amazon Web Services, Inc.",
            "line_item_usage_type": "",
            "line_item_operation": "",
            "reservation_reservation_a_r_n": "",
            "savings_plan_savings_plan_a_r_n": "",
        }
        for name, default in defaults.items():
            if name == "identity_line_item_id":
                cols[name] = default
            else:
                cols[name] = [v if v is not None else default for v in cols[name]]
        return self._table(cols)


def iter_period(
    spec: GenSpec, totals: PeriodTotals | None = None, *, build: bool = True
) -> Iterator[pa.Table]:
    """Yield row-group tables (usage chunks, then the period rows). `totals` (if given) is
    filled as rows are generated and is complete when the iterator is exhausted."""
    g = _Gen(spec, totals)
    left = max(spec.rows - (spec.days + 12), 2)
    while left > 0:
        n = min(spec.chunk_rows, left)
        tbl = g.usage_chunk(n, build=build)
        if tbl is not None:
            yield tbl
        left -= n
    tbl = g.period_rows()
    yield tbl


def expected_totals(spec: GenSpec) -> PeriodTotals:
    """The exact totals a generated period will have (runs the generator without writing)."""
    totals = PeriodTotals(spec.period)
    for _tbl in iter_period(spec, totals, build=False):
        pass
    return totals


# --------------------------------------------------------------------------- writers
@dataclass
class Delivery:
    """One written delivery: its keys (relative to the export root / bucket prefix)."""

    period: str
    manifest_key: str
    data_keys: list[str]
    execution_id: str
    totals: PeriodTotals


def write_cur2_period(
    root: Path,
    spec: GenSpec,
    *,
    export_name: str = "finops-export",
    prefix: str = "",
    bucket: str = "billing",
) -> Delivery:
    """Write one CUR 2.0 period (parquet in row groups) + its manifest, manifest last."""
    exec_id = spec.execution_id
    rel_data = f"data/BILLING_PERIOD={spec.period}/{exec_id}/{export_name}-00001.snappy.parquet"
    path = root / rel_data
    path.parent.mkdir(parents=True, exist_ok=True)
    totals = PeriodTotals(spec.period)
    with pq.ParquetWriter(path, CUR2_SCHEMA, compression="snappy") as w:
        for tbl in iter_period(spec, totals):
            w.write_table(tbl, row_group_size=spec.chunk_rows)
    full = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    manifest = {
        "version": "1.0",
        "exportArn": f"arn:aws:bcm-data-exports:us-east-1:{PAYER[0]}:export/{export_name}-0b1c2d3e",
        "exportName": export_name,
        "executionId": exec_id,
        "billingPeriod": {
            "start": f"{spec.start:%Y-%m-%dT%H:%M:%S.000Z}",
            "end": f"{spec.end:%Y-%m-%dT%H:%M:%S.000Z}",
        },
        "deliveryTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "dataFiles": [f"s3://{bucket}/{full}{rel_data}"],
        "columns": [{"name": f.name, "type": str(f.type)} for f in CUR2_SCHEMA],
    }
    rel_manifest = f"metadata/BILLING_PERIOD={spec.period}/{export_name}-Manifest.json"
    (root / rel_manifest).parent.mkdir(parents=True, exist_ok=True)
    (root / rel_manifest).write_text(json.dumps(manifest, indent=1))
    return Delivery(spec.period, rel_manifest, [rel_data], exec_id, totals)


LEGACY_NAMES = {  # CUR 2.0 snake -> legacy csv header
    "identity_line_item_id": "identity/LineItemId",
    "identity_time_interval": "identity/TimeInterval",
    "bill_invoice_id": "bill/InvoiceId",
    "bill_invoicing_entity": "bill/InvoicingEntity",
    "bill_billing_entity": "bill/BillingEntity",
    "bill_bill_type": "bill/BillType",
    "bill_payer_account_id": "bill/PayerAccountId",
    "bill_billing_period_start_date": "bill/BillingPeriodStartDate",
    "bill_billing_period_end_date": "bill/BillingPeriodEndDate",
    "line_item_usage_account_id": "lineItem/UsageAccountId",
    "line_item_line_item_type": "lineItem/LineItemType",
    "line_item_usage_start_date": "lineItem/UsageStartDate",
    "line_item_usage_end_date": "lineItem/UsageEndDate",
    "line_item_product_code": "lineItem/ProductCode",
    "line_item_usage_type": "lineItem/UsageType",
    "line_item_operation": "lineItem/Operation",
    "line_item_availability_zone": "lineItem/AvailabilityZone",
    "line_item_resource_id": "lineItem/ResourceId",
    "line_item_usage_amount": "lineItem/UsageAmount",
    "line_item_currency_code": "lineItem/CurrencyCode",
    "line_item_unblended_rate": "lineItem/UnblendedRate",
    "line_item_unblended_cost": "lineItem/UnblendedCost",
    "line_item_blended_cost": "lineItem/BlendedCost",
    "line_item_net_unblended_cost": "lineItem/NetUnblendedCost",
    "line_item_line_item_description": "lineItem/LineItemDescription",
    "line_item_legal_entity": "lineItem/LegalEntity",
    "line_item_tax_type": "lineItem/TaxType",
    "product_product_family": "product/productFamily",
    "product_instance_type": "product/instanceType",
    "product_region_code": "product/regionCode",
    "product_location": "product/location",
    "product_servicecode": "product/servicecode",
    "product_sku": "product/sku",
    "pricing_unit": "pricing/unit",
    "pricing_term": "pricing/term",
    "pricing_rate_code": "pricing/RateCode",
    "pricing_currency": "pricing/currency",
    "pricing_public_on_demand_cost": "pricing/publicOnDemandCost",
    "pricing_public_on_demand_rate": "pricing/publicOnDemandRate",
    "reservation_reservation_a_r_n": "reservation/ReservationARN",
    "reservation_effective_cost": "reservation/EffectiveCost",
    "reservation_unused_amortized_upfront_fee_for_billing_period": "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",
    "reservation_unused_recurring_fee": "reservation/UnusedRecurringFee",
    "reservation_unused_quantity": "reservation/UnusedQuantity",
    "savings_plan_savings_plan_a_r_n": "savingsPlan/SavingsPlanARN",
    "savings_plan_savings_plan_effective_cost": "savingsPlan/SavingsPlanEffectiveCost",
    "savings_plan_total_commitment_to_date": "savingsPlan/TotalCommitmentToDate",
    "savings_plan_used_commitment": "savingsPlan/UsedCommitment",
}
LEGACY_TAG_KEYS = ("user_team", "user_project", "user_env")


def _legacy_table(tbl: pa.Table, fmt: str) -> pa.Table:
    """CUR 2.0 chunk -> legacy CUR columns (csv headers `category/Name`, or snake parquet)."""
    arrays, names = [], []
    for snake, legacy in LEGACY_NAMES.items():
        col = tbl.column(snake)
        if fmt == "csv" and pa.types.is_timestamp(col.type):
            col = pa.array([v.strftime("%Y-%m-%dT%H:%M:%SZ") if v else None for v in col.to_pylist()], STR)
        arrays.append(col)
        names.append(legacy if fmt == "csv" else snake)
    tags = tbl.column("resource_tags").to_pylist()
    for key in LEGACY_TAG_KEYS:
        vals = [dict(t).get(key, "") if t else "" for t in tags]
        arrays.append(pa.array(vals, STR))
        names.append(f"resourceTags/{key.replace('_', ':', 1)}" if fmt == "csv" else f"resource_tags_{key}")
    return pa.Table.from_arrays(arrays, names=names)


def write_legacy_period(
    root: Path,
    spec: GenSpec,
    *,
    report_name: str = "finops-cur",
    fmt: str = "csv",
    prefix: str = "",
    bucket: str = "billing",
) -> Delivery:
    """Write a legacy CUR delivery (csv.gz or parquet) with assembly folder + manifests."""
    assembly = spec.execution_id
    rng = f"{spec.start:%Y%m%d}-{spec.end:%Y%m%d}"
    ext = "csv.gz" if fmt == "csv" else "snappy.parquet"
    rel_data = f"{rng}/{assembly}/{report_name}-00001.{ext}"
    path = root / rel_data
    path.parent.mkdir(parents=True, exist_ok=True)
    totals = PeriodTotals(spec.period)
    if fmt == "csv":
        with gzip.open(path, "wb") as gz:
            writer = None
            for tbl in iter_period(spec, totals):
                lt = _legacy_table(tbl, "csv")
                if writer is None:
                    writer = pacsv.CSVWriter(gz, lt.schema)
                writer.write_table(lt)
            if writer is not None:
                writer.close()
    else:
        pw: pq.ParquetWriter | None = None
        for tbl in iter_period(spec, totals):
            lt = _legacy_table(tbl, "parquet")
            if pw is None:
                pw = pq.ParquetWriter(path, lt.schema, compression="snappy")
            pw.write_table(lt)
        if pw is not None:
            pw.close()
    manifest = {
        "assemblyId": assembly,
        "account": PAYER[0],
        "reportId": hashlib.sha256(report_name.encode()).hexdigest(),
        "reportName": report_name,
        "billingPeriod": {
            "start": f"{spec.start:%Y%m%dT000000.000Z}",
            "end": f"{spec.end:%Y%m%dT000000.000Z}",
        },
        "bucket": bucket,
        "reportKeys": [
            f"{prefix.strip('/')}/{rel_data}" if prefix.strip("/") else rel_data
        ],  # bucket-relative
        "compression": "GZIP" if fmt == "csv" else "Parquet",
        "contentType": "text/csv" if fmt == "csv" else "Parquet",
        "columns": [{"category": n.split("/")[0], "name": n.split("/")[-1]} for n in LEGACY_NAMES.values()],
    }
    text = json.dumps(manifest, indent=1)
    (root / rng / assembly / f"{report_name}-Manifest.json").write_text(text)
    (root / rng / f"{report_name}-Manifest.json").write_text(text)
    return Delivery(spec.period, f"{rng}/{report_name}-Manifest.json", [rel_data], assembly, totals)


def upload_tree(
    s3_client: Any,
    local_root: Path,
    bucket: str,
    prefix: str,
    *,
    manifests_last: bool = True,
    keys: list[str] | None = None,
) -> list[str]:
    """Upload files under local_root to s3://bucket/prefix/..., data before manifests (like AWS)."""
    rels = (
        keys
        if keys is not None
        else [str(p.relative_to(local_root)) for p in sorted(local_root.rglob("*")) if p.is_file()]
    )
    rels = sorted(rels, key=lambda r: (manifests_last and r.endswith("Manifest.json"), r))
    pre = prefix.strip("/")
    out = []
    for rel in rels:
        key = f"{pre}/{rel}" if pre else rel
        s3_client.upload_file(str(local_root / rel), bucket, key)
        out.append(key)
    return out


def write_and_upload_cur2(
    s3_client: Any, bucket: str, prefix: str, spec: GenSpec, workdir: Path, export_name: str = "finops-export"
) -> Delivery:
    """Generate one CUR 2.0 period into workdir and upload it (data first, manifest last)."""
    d = write_cur2_period(workdir, spec, export_name=export_name, prefix=prefix, bucket=bucket)
    upload_tree(s3_client, workdir, bucket, prefix, keys=[*d.data_keys, d.manifest_key])
    return d


def csv_bytes(tbl: pa.Table) -> bytes:
    buf = io.BytesIO()
    pacsv.write_csv(tbl, buf)
    return buf.getvalue()
