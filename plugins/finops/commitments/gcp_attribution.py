"""Per-commitment shares of GCP resource-CUD fees (pure: no warehouse, no cloud).

The billing export bills resource CUDs per billing account, region and resource (one fee SKU
`Commitment v1: Nvidia Tesla A100 GPU running in Americas for 1 Year` for all the A100
commitments of a region), so `finops.commitments.gcp` measures them as
`gcp-cud:<account>:<region>:<resource>`. The Compute API lists the commitments themselves
(`regionCommitments.aggregatedList`: selfLink, region, type, resources[{type, amount,
acceleratorType}]), with their end dates. Each such commitment gets, per day, its share of
that day's billed figures: its amount / the amount of every commitment active that day with
the same billing account, region and resource. Shares are split by largest remainder (to
the cent where the total is whole cents, else to the tables' 1e-10 step), so the
commitments' figures add up exactly to the billed ones.

API resource -> the words of the fee SKU (`_words` below drops the vendor / filler words):
VCPU -> `<series> Cpu` (bills as `Core`), MEMORY -> `<series> Ram` (`Memory`), ACCELERATOR
`nvidia-tesla-a100` -> `A100 GPU`, `nvidia-a100-80gb` -> `A100 80GB GPU`, `nvidia-h100-80gb`
-> `H100 80GB GPU`, `nvidia-l4` -> `L4 GPU` (GPU fees carry no series). The series comes from
the commitment's plan type: GENERAL_PURPOSE (N1) has none, GENERAL_PURPOSE_N2 -> N2,
ACCELERATOR_OPTIMIZED -> A2, ACCELERATOR_OPTIMIZED_A3 -> A3, COMPUTE_OPTIMIZED -> `Compute
optimized`, MEMORY_OPTIMIZED -> `Memory-optimized`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal

from finops.allocation import money
from finops.commitments.usage import Utilisation

ZERO = Decimal(0)
CENT = money.CENT
STEP = money.WAREHOUSE_QUANTUM  # the commitments tables' DECIMAL(38,10) step
CUD_PREFIX = "gcp-cud:"
# words a fee SKU or usage SKU carries that say nothing about which resource it is
_FILLER = {"nvidia", "tesla", "running", "attached", "to", "vms", "vm", "instance", "commitment", "v1"}
_SYNONYMS = {"cpu": "core", "vcpu": "core", "cores": "core", "memory": "ram"}
_SERIES = {
    "GENERAL_PURPOSE": "",
    "ACCELERATOR_OPTIMIZED": "A2",
    "COMPUTE_OPTIMIZED": "Compute optimized",
    "MEMORY_OPTIMIZED": "Memory-optimized",
}
_RESOURCE_WORD = {"VCPU": "Cpu", "MEMORY": "Ram", "LOCAL_SSD": "Local SSD"}


@dataclass(frozen=True)
class CommitmentResource:
    """One `resources[]` entry of a GCP commitment as the Compute API lists it."""

    commitment_id: str  # selfLink
    region: str  # us-central1
    resource_type: str  # VCPU | MEMORY | ACCELERATOR | LOCAL_SSD
    amount: Decimal  # vCPUs, MB of memory, GPUs, GB of SSD
    accelerator_type: str = ""  # nvidia-tesla-a100 (ACCELERATOR only)
    plan_type: str = ""  # the commitment's type: ACCELERATOR_OPTIMIZED, GENERAL_PURPOSE_N2, ...
    project: str = ""
    start: date | None = None
    end: date | None = None  # last day it applies

    def active(self, day: date) -> bool:
        return (self.start is None or self.start <= day) and (self.end is None or day <= self.end)


def series(plan_type: str) -> str:
    """ACCELERATOR_OPTIMIZED_A3 -> A3, GENERAL_PURPOSE_N2D -> N2D, GENERAL_PURPOSE -> ''."""
    t = plan_type.upper()
    if t in _SERIES:
        return _SERIES[t]
    m = re.search(r"_([A-Z]\d+[A-Z]*)$", t)
    return m.group(1) if m else ""


def accelerator_words(accelerator_type: str) -> str:
    """`nvidia-tesla-a100` -> `A100 GPU`, `nvidia-h100-80gb` -> `H100 80GB GPU` (the name, or
    the last part of a URL)."""
    name = accelerator_type.rsplit("/", 1)[-1].lower()
    parts = [p for p in name.split("-") if p and p not in ("nvidia", "tesla")]
    return " ".join([p.upper() for p in parts] + ["GPU"])


def billing_resource(r: CommitmentResource) -> str | None:
    """The fee SKU's resource words for an API resource (None: a type the fees do not name)."""
    if r.resource_type.upper() == "ACCELERATOR":
        return accelerator_words(r.accelerator_type) if r.accelerator_type else None
    word = _RESOURCE_WORD.get(r.resource_type.upper())
    if word is None:
        return None
    return f"{series(r.plan_type)} {word}".strip()


def _words(text: str) -> frozenset[str]:
    ws = (_SYNONYMS.get(w, w) for w in re.findall(r"[a-z0-9]+", text.lower()))
    return frozenset(w for w in ws if w not in _FILLER)


def same_resource(fee_resource: str, api_resource: str) -> bool:
    """`Nvidia Tesla A100 GPU running` (a fee) is `A100 GPU` (the API's nvidia-tesla-a100);
    `N2 Cpu` is not `Cpu` (N1) nor `N2 Ram`."""
    a, b = _words(fee_resource), _words(api_resource)
    return bool(a) and a == b


def parse_cud_id(commitment_id: str) -> tuple[str, str, str] | None:
    """`gcp-cud:<billing account>:<region>:<resource>` -> (account, region, resource)."""
    if not commitment_id.startswith(CUD_PREFIX):
        return None
    parts = commitment_id[len(CUD_PREFIX) :].split(":", 2)
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def split(total: Decimal, weights: Sequence[Decimal]) -> list[Decimal]:
    """`total` in proportion to `weights`, each share a whole number of quanta (a cent when
    the total is whole cents, else 1e-10), the leftover quanta to the largest remainders
    (ties: the earlier weight), so the shares add up to exactly `total` (allocation.money)."""
    if not weights or sum(weights, ZERO) <= 0:
        raise ValueError("split needs positive weights")
    q = CENT if total == total.quantize(CENT) else STEP
    keyed = {f"{i:09d}": w for i, w in enumerate(weights)}  # key order = weight order for ties
    parts = money.split(total if q == CENT else total.quantize(STEP), keyed, q)
    return [parts[k] for k in sorted(keyed)]


def attribute(
    rows: Iterable[Utilisation],
    resources: Iterable[CommitmentResource],
    billing_account_of: Mapping[str, str] | Callable[[str], str | None] | None = None,
) -> list[Utilisation]:
    """Replace each `gcp-cud:` day row that API commitments back with one row per commitment
    (commitment_id = the selfLink) holding its share of used / unused cost, covered list
    and quantities. A commitment backs a row when it is active that day, in that region, of
    that resource and (when `billing_account_of` knows its project) paid by that billing
    account. Rows no API commitment backs, and every other row, pass through unchanged."""
    res = [r for r in resources if billing_resource(r) is not None]
    lookup = billing_account_of.get if isinstance(billing_account_of, Mapping) else billing_account_of
    out: list[Utilisation] = []
    for u in rows:
        key = parse_cud_id(u.commitment_id) if u.provider == "gcp" and len(u.period) == 10 else None
        if key is None:
            out.append(u)
            continue
        account, region, fee_res = key
        day = date.fromisoformat(u.period)
        backing: dict[str, Decimal] = {}
        for r in res:
            if (
                r.region != region
                or not r.active(day)
                or not same_resource(fee_res, billing_resource(r) or "")
            ):
                continue
            paid_by = lookup(r.project) if lookup and r.project else None
            if paid_by is not None and paid_by != account:
                continue
            backing[r.commitment_id] = backing.get(r.commitment_id, ZERO) + r.amount
        backing = {k: v for k, v in backing.items() if v > 0}
        if not backing:
            out.append(u)
            continue
        ids = sorted(backing)
        weights = [backing[i] for i in ids]
        used, unused, listed, used_q, unused_q = (
            split(v, weights)
            for v in (u.used_cost, u.unused_cost, u.covered_list, u.used_quantity, u.unused_quantity)
        )
        for n, cid in enumerate(ids):
            out.append(
                replace(
                    u,
                    commitment_id=cid,
                    used_cost=used[n],
                    unused_cost=unused[n],
                    covered_list=listed[n],
                    used_quantity=used_q[n],
                    unused_quantity=unused_q[n],
                    units=set(u.units),
                    unused_reported=True,
                )
            )
    return out


def reports_unused(provider: str, commitment_id: str) -> bool | None:
    """True for the GCP rows measured from fees (billed CUDs and the API commitments that
    share them), None (by provider) for the rest."""
    if provider != "gcp":
        return None
    if commitment_id.startswith((CUD_PREFIX, "gcp-spend-cud:")):
        return True
    return True if "/commitments/" in commitment_id else None
