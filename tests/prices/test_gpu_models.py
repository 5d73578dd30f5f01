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


def test_partitioned_azure_sizes_are_fractions_of_a_gpu():
    from finops.prices.gpu_models import azure_family_gpu, azure_gpu_divisor

    assert [azure_gpu_divisor(f"Standard_NV{n}ads_A10_v5") for n in (6, 12, 18, 36, 72)] == [6, 3, 2, 1, 1]
    assert azure_gpu_divisor("standard_nv6ads_a10_v5") == 6  # ARM returns sizes in any case
    assert azure_gpu_divisor("Standard_NV4as_v4") == 8 and azure_gpu_divisor("Standard_NG8ads_V620_v1") == 4
    assert azure_gpu_divisor("Standard_NC4as_T4_v3") == 1 and azure_gpu_divisor(None) == 1
    assert azure_gpu_divisor("Standard_NV7ads_A10_v5") == 1  # not a whole slice: never invent one
    assert azure_family_gpu("StandardNVADSA10v5Family") == "A10"
    assert azure_family_gpu("standard NDISv5 MI300X Family") == "MI300X" and azure_family_gpu("nope") is None


def test_the_idle_policy_sees_one_partial_gpu_on_a_partitioned_vm():
    from finops.policies.inventory.azure import to_resource

    vm = {
        "id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/v",
        "location": "eastus",
        "properties": {"hardwareProfile": {"vmSize": "Standard_NV6ads_A10_v5"}},
    }
    assert to_resource(vm, "s").gpu_count == 1  # its one (1/6) GPU must report, never 1 of several


def test_gcp_accelerator_names():
    assert normalise_gpu("nvidia-h100-mega-80gb") == "H100-80GB"
    assert normalise_gpu("NVIDIA H200 141GB") == "H200" and normalise_gpu("nvidia-b200") == "B200"
    assert normalise_gpu("NVIDIA RTX PRO 6000") is None  # unknown: a drift entry, not a guess
