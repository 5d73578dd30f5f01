"""Every billing-period Param of the DAG forms refuses non-ASCII digits: jsonschema runs Python's
`re`, where `\\d` matches any Unicode digit ('２０２６-０１' would pass the form)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def period_patterns() -> dict[str, str]:
    from airflow.dag_processing.dagbag import DagBag

    out: dict[str, str] = {}
    for name in ("finops_billing_aws.py", "finops_audit.py"):
        bag = DagBag(dag_folder=str(REPO / "dags" / name))
        for dag_id, dag in bag.dags.items():
            param = dag.params.get_param("billing_period")
            out[dag_id] = param.schema["pattern"]
    return out


def test_period_params_take_ascii_only(period_patterns):
    assert set(period_patterns) == {"finops_billing_aws", "finops_audit"}
    for dag_id, pattern in period_patterns.items():
        assert re.search(pattern, "2026-01"), dag_id
        assert not re.search(pattern, "２０２６-０１"), dag_id  # full-width digits
        assert not re.search(pattern, "٢٠٢٦-٠١"), dag_id  # Arabic-Indic digits
