"""Instance family of a provider's instance / machine / VM size name.

Commitments are bought per family (an AWS RI or EC2 Instance Savings Plan covers one family,
a GCP resource CUD one machine series, an Azure reservation one size-flexibility group), so
coverage is reported per family rather than per exact size."""

from __future__ import annotations

import re

# Azure: Standard_NC24ads_A100_v4 -> NCads_A100_v4 (the size number dropped: the flexibility group)
_AZURE = re.compile(r"^(?:standard_|basic_)?([a-z]+)\d+(?:-\d+)?(.*)$", re.IGNORECASE)


def instance_family(provider: str, instance_type: str | None) -> str | None:
    """`g5.2xlarge` -> `g5` (AWS), `a2-highgpu-1g` -> `a2` (GCP), `Standard_NC24ads_A100_v4` ->
    `NCads_A100_v4` (Azure); anything else keeps its name; None / blank -> None."""
    name = (instance_type or "").strip()
    if not name:
        return None
    p = provider.lower()
    if p == "aws":
        return name.split(".", 1)[0]
    if p == "gcp":
        return name.split("-", 1)[0]
    if p == "azure":
        m = _AZURE.match(name)
        return f"{m.group(1)}{m.group(2)}" if m else name
    return name
