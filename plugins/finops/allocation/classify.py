"""Which showback line a cost row belongs to (gpu / storage / egress / compute / other), which
GPU model an instance type carries, and spot vs on-demand: the hidden costs made visible."""

from __future__ import annotations

import re
from collections.abc import Mapping

# Token search first (Azure / Lambda / GCP names carry the model), then AWS family prefixes.
_TOKENS: tuple[tuple[str, str], ...] = (
    ("gb200", "GB200"),
    ("b200", "B200"),
    ("h200", "H200"),
    ("h100", "H100"),
    ("a100", "A100"),
    ("l40s", "L40S"),
    ("a10g", "A10G"),
    ("a10", "A10"),
    ("a6000", "RTX A6000"),
    ("v100", "V100"),
    ("t4", "T4"),
    ("l4", "L4"),
    ("mi300", "MI300X"),
)
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("p6-b200", "B200"),
    ("p5en.", "H200"),
    ("p5e.", "H200"),
    ("p5.", "H100"),
    ("p4de.", "A100"),
    ("p4d.", "A100"),
    ("p3dn.", "V100"),
    ("p3.", "V100"),
    ("p2.", "K80"),
    ("g6e.", "L40S"),
    ("g6.", "L4"),
    ("g5g.", "T4G"),
    ("g5.", "A10G"),
    ("g4dn.", "T4"),
    ("g4ad.", "Radeon Pro V520"),
    ("trn1", "Trainium"),
    ("trn2", "Trainium2"),
    ("inf2.", "Inferentia2"),
    ("inf1.", "Inferentia"),
    ("a3-ultragpu", "H200"),
    ("a3-", "H100"),
    ("a2-ultragpu", "A100 80GB"),
    ("a2-", "A100"),
    ("g2-", "L4"),
    ("standard_nd96isr_h100", "H100"),
    ("standard_nc", "NVIDIA (NC)"),
    ("standard_nd", "NVIDIA (ND)"),
    ("standard_nv", "NVIDIA (NV)"),
    ("gpu_", "GPU"),
)
_EGRESS = re.compile(r"DataTransfer-Out|-Out-Bytes|AWS-Out|Egress|Internet Data Transfer|Download", re.I)
_STORAGE = re.compile(r"TimedStorage|EBS:Volume|EBS:Snapshot|Storage-|SnapshotUsage", re.I)


def gpu_model(instance_type: str | None, extra: Mapping[str, str] | None = None) -> str | None:
    """GPU model carried by an instance type, or None for a non-GPU instance."""
    if not instance_type:
        return None
    it = instance_type.lower()
    for prefix, model in (extra or {}).items():
        if it.startswith(prefix.lower()):
            return model
    for prefix, model in _PREFIXES:
        if it.startswith(prefix):
            # generic families: refine with a token when the name carries one
            if model.startswith("NVIDIA (") or model == "GPU":
                for tok, m in _TOKENS:
                    if re.search(rf"(?<![a-z0-9]){tok}(?![a-z0-9])|_{tok}", it):
                        return m
            return model
    return None


def purchase_option(pricing_category: str | None, usage_type: str | None) -> str:
    """spot | committed | on_demand (FOCUS PricingCategory, with the usage type as fallback)."""
    if pricing_category == "Dynamic" or (usage_type and "spot" in usage_type.lower()):
        return "spot"
    if pricing_category == "Committed":
        return "committed"
    return "on_demand"


def line_of(
    service_category: str | None,
    usage_type: str | None,
    instance_type: str | None,
    service_name: str | None = None,
    extra_gpu: Mapping[str, str] | None = None,
) -> str:
    if gpu_model(instance_type, extra_gpu):
        return "gpu"
    ut = usage_type or ""
    if _EGRESS.search(ut) or (service_name or "").lower() in {"data transfer", "aws data transfer"}:
        return "egress"
    if service_category == "Storage" or _STORAGE.search(ut):
        return "storage"
    if service_category == "Compute":
        return "compute"
    return "other"
