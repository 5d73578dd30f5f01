"""nvidia-smi parsing on captured real output shapes, and the trigger's serialisation."""

from __future__ import annotations

import pytest

from finops.gpubench.facts import SMI_FIELDS, parse_nvlink_status, parse_smi_query
from finops.gpubench.triggers import BenchResultsTrigger, split_uri

SMI = (
    "NVIDIA H100 80GB HBM3, 81559, 550.90.07, 1980, 2619, 1980, 2619, 700.00, 5, 16, 5, 16, 34, 1650123456789\n"
    "NVIDIA H100 80GB HBM3, 81559, 550.90.07, 1980, 2619, 345, 2619, 700.00, 5, 16, 4, 16, [N/A], 1650123456790\n"
)
NVLINK = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e1b2b9a)
\t Link 0: 26.562 GB/s
\t Link 1: 26.562 GB/s
\t Link 2: 26.562 GB/s
"""


def test_parse_nvidia_smi_query():
    gpus = parse_smi_query(SMI)
    assert len(gpus) == 2 and len(SMI_FIELDS) == 14
    g = gpus[0]
    assert g["name"] == "NVIDIA H100 80GB HBM3" and g["driver_version"] == "550.90.07"
    assert g["memory.total"] == 81559.0 and g["clocks.max.sm"] == 1980.0 and g["power.limit"] == 700.0
    assert (g["pcie.link.gen.max"], g["pcie.link.width.max"]) == (5.0, 16.0)
    assert gpus[1]["temperature.gpu"] is None and gpus[1]["pcie.link.gen.current"] == 4.0
    assert parse_smi_query("garbage line\n") == []


def test_parse_nvlink_status():
    assert parse_nvlink_status(NVLINK) == {
        "links": 3,
        "gbps_per_link": 26.562,
        "total_gbps": pytest.approx(79.686),
    }
    assert parse_nvlink_status("GPU 0: NVIDIA L4\n")["links"] == 0


def test_trigger_round_trips_and_uris():
    trig = BenchResultsTrigger("s3://b/k/x.json", "aws_default", timeout_s=60, poll_s=5, started_at=123.0)
    path, kwargs = trig.serialize()
    assert path == "finops.gpubench.triggers.BenchResultsTrigger"
    again = BenchResultsTrigger(**kwargs)
    assert again.serialize() == (path, kwargs) and again.started_at == 123.0
    assert split_uri("gs://bkt/a/b.json") == ("gs", "bkt", "a/b.json")
    assert split_uri("https://acct.blob.core.windows.net/cont/p/x.json") == ("wasb", "cont", "p/x.json")
    with pytest.raises(ValueError):
        split_uri("ftp://x/y")
