from __future__ import annotations

import pytest

from finops.prices.gpu_models import KNOWN_INSTANCES, gpu_from_instance_name, normalise_gpu


@pytest.mark.parametrize(
    ("name", "mem", "want"),
    [
        ("H100", 80, "H100-80GB"),  # AWS GpuInfo
        ("NVIDIA H100 80GB HBM3", None, "H100-80GB"),
        ("nvidia-h100-80gb", None, "H100-80GB"),  # GCP accelerator type
        ("H100 (80 GB SXM5)", None, "H100-80GB"),  # Lambda
        ("H100 NVL", None, "H100-NVL-94GB"),
        ("H200", 141, "H200"),
        ("GH200 (96 GB)", None, "GH200"),
        ("A100", 40, "A100-40GB"),
        ("A100", 80, "A100-80GB"),
        ("Tesla A100", None, "A100-40GB"),  # GCP's SKU wording for the 40GB part
        ("Tesla A100 80GB", None, "A100-80GB"),
        ("nvidia-a100-80gb", None, "A100-80GB"),
        ("A100 (40 GB SXM4)", None, "A100-40GB"),
        ("A10G", 24, "A10G"),
        ("A10 (24 GB PCIe)", None, "A10"),
        ("L4", None, "L4"),
        ("nvidia-l4", None, "L4"),
        ("L40S", 48, "L40S"),
        ("T4", 16, "T4"),
        ("nvidia-tesla-t4", None, "T4"),
        ("T4g", 16, "T4G"),
        ("V100", 16, "V100-16GB"),
        ("V100", 32, "V100-32GB"),
        ("Radeon Pro V520", 8, "V520"),
    ],
)
def test_normalise_known_names(name, mem, want):
    assert normalise_gpu(name, mem) == want


@pytest.mark.parametrize(
    "bad",
    [None, 42, "", "   ", "Quantum Flux 9000", "x" * 10_000, "'; DROP TABLE x;--", "A1000", "L44", "T40"],
)
def test_unknown_or_hostile_names_map_to_none(bad):
    assert normalise_gpu(bad) is None


def test_static_table_is_normalised_and_consistent():
    for (provider, itype), spec in KNOWN_INSTANCES.items():
        assert provider in {"aws", "azure", "gcp"}
        assert spec.gpu_model == normalise_gpu(spec.gpu_model, spec.gpu_memory_gib), itype
        assert spec.gpu_count and spec.gpu_count > 0
        assert spec.vcpus and spec.memory_gib


def test_gpu_from_instance_name():
    assert gpu_from_instance_name("azure", "Standard_ND96isr_H100_v5") == "H100-80GB"
    assert gpu_from_instance_name("azure", "Standard_NC8ads_A10_v4") == "A10"
    assert gpu_from_instance_name("azure", "Standard_D2s_v5") is None
    assert gpu_from_instance_name("gcp", "g2-standard-8") == "L4"
