"""GPU names across clouds -> one vocabulary (`H100-80GB`, `A100-40GB`, `L4`, ...), and the
static knowledge the providers' spec APIs do not give: the interconnect, GPU memory where an API
leaves it out, the GPU model of Azure's VM families, the fraction of a GPU a partitioned size
gets, and a table of instance types used only when a spec API call is refused.

Pure: no Airflow, no cloud SDKs. Unknown or hostile names map to None, never raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "GPU_MEMORY_GIB",
    "KNOWN_INSTANCES",
    "InstanceSpec",
    "azure_family_gpu",
    "azure_gpu_divisor",
    "gpu_from_instance_name",
    "known_instance",
    "normalise_gpu",
]

_MAX_LEN = 200

# (pattern, canonical) checked in order; patterns run on an upper-cased, space-collapsed name.
# Memory variants are decided in `normalise_gpu` where the name or memory tells them apart.
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bGH200\b"), "GH200"),
    (re.compile(r"\bGB300\b"), "GB300"),
    (re.compile(r"\bGB200\b"), "GB200"),
    (re.compile(r"\bB300\b"), "B300"),
    (re.compile(r"\bB200\b"), "B200"),
    (re.compile(r"\bH200\b"), "H200"),
    (re.compile(r"\bH100\b.*\bNVL\b|\bH100NVL\b|\bH100 ?94"), "H100-NVL-94GB"),
    (re.compile(r"\bH100\b|\bH100_"), "H100-80GB"),
    (re.compile(r"\bA100\b"), "A100"),
    (re.compile(r"\bL40S\b"), "L40S"),
    (re.compile(r"\bL40\b"), "L40"),
    (re.compile(r"\bL4\b"), "L4"),
    (re.compile(r"\bA10G\b"), "A10G"),
    (re.compile(r"\bA10\b"), "A10"),
    (re.compile(r"\bA40\b"), "A40"),
    (re.compile(r"\bRTX ?A6000\b|\bA6000\b"), "A6000"),
    (re.compile(r"\bRTX ?6000\b.*\bADA\b"), "RTX6000-ADA"),
    (re.compile(r"\bT4G\b"), "T4G"),
    (re.compile(r"\bT4\b"), "T4"),
    (re.compile(r"\bV100\b"), "V100"),
    (re.compile(r"\bP100\b"), "P100"),
    (re.compile(r"\bP4\b"), "P4"),
    (re.compile(r"\bK80\b"), "K80"),
    (re.compile(r"\bM60\b"), "M60"),
    (re.compile(r"\bMI300X\b"), "MI300X"),
    (re.compile(r"\bMI25\b"), "MI25"),
    (re.compile(r"\bV620\b"), "V620"),
    (re.compile(r"\bRADEON PRO V520\b|\bV520\b"), "V520"),
]
_MEM = re.compile(r"(\d{2,3}) ?GB")


def normalise_gpu(name: object, memory_gib: float | int | None = None) -> str | None:
    """Canonical GPU model for a provider's GPU name ("NVIDIA A100 80GB", "nvidia-tesla-a100",
    "Nvidia Tesla A100 80GB GPU", "A100 (40 GB SXM4)", "H100"...). None when unknown."""
    if not isinstance(name, str) or not name.strip() or len(name) > _MAX_LEN:
        return None
    s = re.sub(r"[\s_\-]+", " ", name.upper()).strip()
    s = s.replace("NVIDIA ", "").replace("TESLA ", "")
    for pat, canon in _RULES:
        if not pat.search(s):
            continue
        mem = memory_gib
        m = _MEM.search(s)
        if m:
            mem = int(m.group(1))
        if canon == "A100":
            return "A100-80GB" if (mem is not None and float(mem) >= 70) or "ULTRA" in s else "A100-40GB"
        if canon == "V100":
            return "V100-32GB" if mem is not None and float(mem) >= 30 else "V100-16GB"
        if canon == "H100-80GB" and mem is not None and 90 <= float(mem) < 100:
            return "H100-NVL-94GB"
        return canon
    return None


@dataclass(frozen=True)
class InstanceSpec:
    gpu_model: str | None
    gpu_count: int | None
    gpu_memory_gib: float | None  # per GPU
    vcpus: int | None = None
    memory_gib: float | None = None
    interconnect: str | None = None
    # a partitioned size gets gpu_count / gpu_divisor of a GPU (Standard_NV6ads_A10_v5: 1 / 6)
    gpu_divisor: int = 1


def _s(
    gpu: str, n: int, mem: float, vcpus: int, ram: float, ic: str | None = None, div: int = 1
) -> InstanceSpec:
    return InstanceSpec(gpu, n, mem, vcpus, ram, ic, div)


# Memory per GPU by model: GCP's and Azure's spec APIs do not give it (AWS and Lambda do).
GPU_MEMORY_GIB: dict[str, float] = {
    "GB300": 288,
    "GB200": 192,
    "B300": 288,
    "B200": 180,
    "H200": 141,
    "H100-NVL-94GB": 94,
    "H100-80GB": 80,
    "GH200": 96,
    "A100-80GB": 80,
    "A100-40GB": 40,
    "L40S": 48,
    "L40": 48,
    "L4": 24,
    "A10G": 24,
    "A10": 24,
    "A40": 48,
    "A6000": 48,
    "RTX6000-ADA": 48,
    "T4": 16,
    "T4G": 16,
    "V100-32GB": 32,
    "V100-16GB": 16,
    "P100": 16,
    "P4": 8,
    "K80": 12,
    "M60": 8,
    "MI300X": 192,
    "MI25": 16,
    "V620": 32,
    "V520": 8,
}


# (provider, instance type) -> spec. AWS entries only matter where describe_instance_types is not
# reachable (and for the interconnect, which no API returns).
KNOWN_INSTANCES: dict[tuple[str, str], InstanceSpec] = {
    # AWS
    ("aws", "p5.48xlarge"): _s("H100-80GB", 8, 80, 192, 2048, "NVLink 900GB/s + EFA 3200Gbps"),
    ("aws", "p5e.48xlarge"): _s("H200", 8, 141, 192, 2048, "NVLink 900GB/s + EFA 3200Gbps"),
    ("aws", "p5en.48xlarge"): _s("H200", 8, 141, 192, 2048, "NVLink 900GB/s + EFAv3 3200Gbps"),
    ("aws", "p4d.24xlarge"): _s("A100-40GB", 8, 40, 96, 1152, "NVLink 600GB/s + EFA 400Gbps"),
    ("aws", "p4de.24xlarge"): _s("A100-80GB", 8, 80, 96, 1152, "NVLink 600GB/s + EFA 400Gbps"),
    ("aws", "p3.2xlarge"): _s("V100-16GB", 1, 16, 8, 61),
    ("aws", "p3.8xlarge"): _s("V100-16GB", 4, 16, 32, 244, "NVLink"),
    ("aws", "p3.16xlarge"): _s("V100-16GB", 8, 16, 64, 488, "NVLink"),
    ("aws", "p3dn.24xlarge"): _s("V100-32GB", 8, 32, 96, 768, "NVLink + EFA 100Gbps"),
    ("aws", "g5.xlarge"): _s("A10G", 1, 24, 4, 16),
    ("aws", "g5.2xlarge"): _s("A10G", 1, 24, 8, 32),
    ("aws", "g5.12xlarge"): _s("A10G", 4, 24, 48, 192, "PCIe"),
    ("aws", "g5.48xlarge"): _s("A10G", 8, 24, 192, 768, "PCIe"),
    ("aws", "g6.xlarge"): _s("L4", 1, 24, 4, 16),
    ("aws", "g6.12xlarge"): _s("L4", 4, 24, 48, 192, "PCIe"),
    ("aws", "g6e.xlarge"): _s("L40S", 1, 48, 4, 32),
    ("aws", "g6e.12xlarge"): _s("L40S", 4, 48, 48, 384, "PCIe"),
    ("aws", "g4dn.xlarge"): _s("T4", 1, 16, 4, 16),
    ("aws", "g4dn.12xlarge"): _s("T4", 4, 16, 48, 192, "PCIe"),
    # Azure (the Retail Prices API has no specs)
    ("azure", "Standard_NC4as_T4_v3"): _s("T4", 1, 16, 4, 28),
    ("azure", "Standard_NC8as_T4_v3"): _s("T4", 1, 16, 8, 56),
    ("azure", "Standard_NC16as_T4_v3"): _s("T4", 1, 16, 16, 110),
    ("azure", "Standard_NC64as_T4_v3"): _s("T4", 4, 16, 64, 440, "PCIe"),
    ("azure", "Standard_NC6s_v3"): _s("V100-16GB", 1, 16, 6, 112),
    ("azure", "Standard_NC12s_v3"): _s("V100-16GB", 2, 16, 12, 224),
    ("azure", "Standard_NC24s_v3"): _s("V100-16GB", 4, 16, 24, 448),
    ("azure", "Standard_NC24ads_A100_v4"): _s("A100-80GB", 1, 80, 24, 220),
    ("azure", "Standard_NC48ads_A100_v4"): _s("A100-80GB", 2, 80, 48, 440, "PCIe"),
    ("azure", "Standard_NC96ads_A100_v4"): _s("A100-80GB", 4, 80, 96, 880, "PCIe"),
    ("azure", "Standard_ND96asr_v4"): _s(
        "A100-40GB", 8, 40, 96, 900, "NVLink 600GB/s + InfiniBand 200Gbps x8"
    ),
    ("azure", "Standard_ND96amsr_A100_v4"): _s(
        "A100-80GB", 8, 80, 96, 1900, "NVLink 600GB/s + InfiniBand 200Gbps x8"
    ),
    ("azure", "Standard_ND96isr_H100_v5"): _s(
        "H100-80GB", 8, 80, 96, 1900, "NVLink 900GB/s + InfiniBand 400Gbps x8"
    ),
    ("azure", "Standard_ND96isr_H200_v5"): _s(
        "H200", 8, 141, 96, 1850, "NVLink 900GB/s + InfiniBand 400Gbps x8"
    ),
    ("azure", "Standard_NC40ads_H100_v5"): _s("H100-NVL-94GB", 1, 94, 40, 320),
    ("azure", "Standard_NC80adis_H100_v5"): _s("H100-NVL-94GB", 2, 94, 80, 640, "NVLink"),
    ("azure", "Standard_NV36ads_A10_v5"): _s("A10", 1, 24, 36, 440),
    ("azure", "Standard_NV72ads_A10_v5"): _s("A10", 2, 24, 72, 880),
    # GCP (machine types with built-in GPUs; the catalog prices them per core / GiB / GPU)
    ("gcp", "a2-highgpu-1g"): _s("A100-40GB", 1, 40, 12, 85),
    ("gcp", "a2-highgpu-2g"): _s("A100-40GB", 2, 40, 24, 170, "NVLink"),
    ("gcp", "a2-highgpu-4g"): _s("A100-40GB", 4, 40, 48, 340, "NVLink"),
    ("gcp", "a2-highgpu-8g"): _s("A100-40GB", 8, 40, 96, 680, "NVLink"),
    ("gcp", "a2-megagpu-16g"): _s("A100-40GB", 16, 40, 96, 1360, "NVSwitch"),
    ("gcp", "a2-ultragpu-1g"): _s("A100-80GB", 1, 80, 12, 170),
    ("gcp", "a2-ultragpu-2g"): _s("A100-80GB", 2, 80, 24, 340, "NVLink"),
    ("gcp", "a2-ultragpu-4g"): _s("A100-80GB", 4, 80, 48, 680, "NVLink"),
    ("gcp", "a2-ultragpu-8g"): _s("A100-80GB", 8, 80, 96, 1360, "NVLink"),
    ("gcp", "a3-highgpu-1g"): _s("H100-80GB", 1, 80, 26, 234),
    ("gcp", "a3-highgpu-2g"): _s("H100-80GB", 2, 80, 52, 468, "NVLink"),
    ("gcp", "a3-highgpu-4g"): _s("H100-80GB", 4, 80, 104, 936, "NVLink"),
    ("gcp", "a3-highgpu-8g"): _s("H100-80GB", 8, 80, 208, 1872, "NVLink 900GB/s + GPUDirect-TCPX"),
    ("gcp", "g2-standard-4"): _s("L4", 1, 24, 4, 16),
    ("gcp", "g2-standard-8"): _s("L4", 1, 24, 8, 32),
    ("gcp", "g2-standard-12"): _s("L4", 1, 24, 12, 48),
    ("gcp", "g2-standard-16"): _s("L4", 1, 24, 16, 64),
    ("gcp", "g2-standard-24"): _s("L4", 2, 24, 24, 96),
    ("gcp", "g2-standard-32"): _s("L4", 1, 24, 32, 128),
    ("gcp", "g2-standard-48"): _s("L4", 4, 24, 48, 192),
    ("gcp", "g2-standard-96"): _s("L4", 8, 24, 96, 384),
}


# Azure VM sizes are case-insensitive, and ARM returns a VM's size in the case it was created
# with (`standard_nd96isr_h100_v5` is a valid size): Azure's entries are looked up without case.
_AZURE_SIZES: dict[str, InstanceSpec] = {
    t.casefold(): s for (p, t), s in KNOWN_INSTANCES.items() if p == "azure"
}


def known_instance(provider: str, instance_type: str) -> InstanceSpec | None:
    if provider == "azure" and isinstance(instance_type, str):
        return _AZURE_SIZES.get(instance_type.casefold())
    return KNOWN_INSTANCES.get((provider, instance_type))


# Interconnect by AWS family (describe_instance_types says nothing about NVLink).
AWS_FAMILY_INTERCONNECT: dict[str, str] = {
    "p5": "NVLink 900GB/s + EFA 3200Gbps",
    "p5e": "NVLink 900GB/s + EFA 3200Gbps",
    "p5en": "NVLink 900GB/s + EFAv3 3200Gbps",
    "p4d": "NVLink 600GB/s + EFA 400Gbps",
    "p4de": "NVLink 600GB/s + EFA 400Gbps",
    "p3dn": "NVLink + EFA 100Gbps",
}

# Interconnect by GCP machine type prefix (the Compute API says nothing about NVLink either).
GCP_PREFIX_INTERCONNECT: dict[str, str] = {
    "a3-highgpu-8g": "NVLink 900GB/s + GPUDirect-TCPX",
    "a3-megagpu-8g": "NVLink 900GB/s + GPUDirect-TCPXO",
    "a3-ultragpu-8g": "NVLink 900GB/s + RDMA 3200Gbps",
    "a4-highgpu-8g": "NVLink 1800GB/s + RDMA 3200Gbps",
    "a2-megagpu-16g": "NVSwitch",
}

# Azure's Resource SKUs API names no GPU model: the VM family does (its `family` field, matched
# without case and spaces). A new family is a drift entry until it is added here.
AZURE_FAMILY_GPU: dict[str, str] = {
    "standardncfamily": "K80",
    "standardncsv2family": "P100",
    "standardncsv3family": "V100-16GB",
    "standardndsv2family": "V100-32GB",
    "standardncasv3_t4family": "T4",
    "standardncadsa100v4family": "A100-80GB",
    "standardndamsv4_a100family": "A100-80GB",
    "standardndasv4_a100family": "A100-40GB",
    "standardnvsv3family": "M60",
    "standardnvsv4family": "MI25",
    "standardnvadsa10v5family": "A10",
    "standardncadsa10v4family": "A10",
    "standardncadsh100v5family": "H100-NVL-94GB",
    "standardnccads2023family": "H100-NVL-94GB",
    "standardndsh100v5family": "H100-80GB",
    "standardndisrh200v5family": "H200",
    "standardndisrgb200v6ndrfamily": "GB200",
    "standardndisrgb300v6family": "GB300",
    "standardndisv5mi300xfamily": "MI300X",
    "standardngadsv620v1family": "V620",
}


# Sizes whose Resource SKUs entry carries no `GPUs` capability although the family is a GPU
# family: the count comes from Azure's size documentation (the NGads V620 sizes are listed
# without one too: 1 here, the slice comes from azure_gpu_divisor). Standard_ND96isr_MI300X_v5,
# the documented MI300X size, does say `GPUs: 8`.
AZURE_MISSING_GPU_COUNT: dict[str, int] = {
    "standard_nd96is_mi300x_v5": 8,
    "standard_nd128isr_ndr_gb200_v6": 4,
    "standard_nd128isr_gb300_v6": 4,
    "standard_ng8ads_v620_v1": 1,
    "standard_ng16ads_v620_v1": 1,
    "standard_ng32ads_v620_v1": 1,
    "standard_ng32adms_v620_v1": 1,
}


def azure_family_gpu(family: object) -> str | None:
    if not isinstance(family, str) or len(family) > _MAX_LEN:
        return None
    return AZURE_FAMILY_GPU.get(re.sub(r"\s+", "", family).casefold())


# Partitioned Azure sizes: the Resource SKUs API says `GPUs: 1` for them, but the VM gets a
# slice. The whole GPU goes with this many vCPUs in each series, so the slice is vcpus / whole.
_AZURE_PARTITIONED: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"^standard_nv(\d+)ads_a10_v5$", re.I), 36),
    (re.compile(r"^standard_nv(\d+)as_v4$", re.I), 32),
    (re.compile(r"^standard_ng(\d+)ads_v620_v1$", re.I), 32),
]


def azure_gpu_divisor(size: object) -> int:
    """1 for whole GPUs; 6 for a sixth of one (Standard_NV6ads_A10_v5), 2 for a half, ..."""
    if not isinstance(size, str) or len(size) > _MAX_LEN:
        return 1
    for pat, whole in _AZURE_PARTITIONED:
        if (m := pat.match(size)) and 0 < int(m.group(1)) < whole and whole % int(m.group(1)) == 0:
            return whole // int(m.group(1))
    return 1


_AZURE_GPU_IN_NAME = re.compile(r"_(A100|H100|H200|T4|A10|V620|MI300X)_", re.I)


def gpu_from_instance_name(provider: str, instance_type: str) -> str | None:
    """Best-effort GPU model from an instance type name where no table entry exists."""
    if not isinstance(instance_type, str) or len(instance_type) > _MAX_LEN:
        return None
    spec = known_instance(provider, instance_type)
    if spec:
        return spec.gpu_model
    if provider == "azure":
        m = _AZURE_GPU_IN_NAME.search(instance_type)
        if m:
            return normalise_gpu(m.group(1))
    return None
