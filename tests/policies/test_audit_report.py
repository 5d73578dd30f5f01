"""policy_actions / tag_compliance writers and the violations report, on DuckDB and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from finops.policies.audit import RECORDED, Entry, record_tag_snapshot, write_rows
from finops.policies.decide import Resource, check_tags, decide
from finops.policies.model import Policy
from finops.policies.report import violations_report
from tests.fixtures.focus_rows import focus_row, focus_table

EVIL = "'); DROP TABLE tag_compliance; --"
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)

POL = Policy.model_validate(
    {
        "name": "required-tags",
        "kind": "tags",
        "action": "report",
        "required_tags": [
            {"key": "team", "aliases": ["Team"]},
            {"key": "cost-center", "pattern": r"cc-\d{4}"},
        ],
    }
)


def _res(rid: str, tags: dict[str, str], provider: str = "aws") -> Resource:
    return Resource(provider, "123456789012", "us-east-1", rid, name=rid, tags=tags)


def test_audit_and_report_on_both_backends(any_wh, finops_home):
    resources = [
        _res("i-00000001", {"Team": "ml"}),  # missing cost-center
        _res("i-00000002", {"team": "ml", "cost_center": "nope"}),  # invalid cost-center
        _res("i-00000003", {"user:team": "data", "CostCenter": "x"}),  # CostCenter != cost_center -> missing
        _res("i-00000004", {"team": "ml", "cost-center": "cc-1234"}),  # compliant
        _res("i-00000005", {"team": "=HYPERLINK(1)", "owner": EVIL}),  # hostile, missing cost-center
        _res(
            "/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/vm1", {}, "azure"
        ),
    ]
    decisions = [(decide(POL, r, NOW), check_tags(POL, r)) for r in resources]
    record_tag_snapshot(any_wh, "run-1", POL.name, NOW.date(), decisions)
    record_tag_snapshot(any_wh, "run-1", POL.name, NOW.date(), decisions)  # idempotent re-run
    write_rows(any_wh, "run-1", "tags", [Entry(d, "recorded", RECORDED) for d, _ in decisions], True)
    assert any_wh.query("SELECT count(*) FROM tag_compliance")[0][0] == 6
    assert any_wh.query("SELECT count(*) FROM policy_actions WHERE run_id = ?", ["run-1"])[0][0] == 6
    owner = any_wh.query("SELECT owner, evidence FROM policy_actions WHERE resource_id = ?", ["i-00000005"])[
        0
    ]
    assert owner[0] == EVIL and json.loads(owner[1])["missing"] == ["cost-center"]
    rows = {
        r[0]: r[1:]
        for r in any_wh.query(
            "SELECT resource_id, compliant, team, missing_tags, invalid_tags FROM tag_compliance"
        )
    }
    assert rows["i-00000004"][0] is True
    assert json.loads(rows["i-00000002"][3]) == ["cost-center"] and rows["i-00000003"][1] == "data"

    costs = [
        focus_row("main", "2026-11", 1, resource_id="i-00000001", effective_cost=Decimal("100.50")),
        focus_row("main", "2026-11", 2, resource_id="i-00000001", effective_cost=Decimal("0.25")),
        focus_row("main", "2026-11", 3, resource_id="i-00000002", effective_cost=Decimal("10")),
        focus_row("main", "2026-11", 4, resource_id="i-00000004", effective_cost=Decimal("999")),  # compliant
        focus_row(
            "main", "2026-10", 5, resource_id="i-00000001", effective_cost=Decimal("5000")
        ),  # other month
        focus_row(
            "az",
            "2026-11",
            6,
            resource_id="/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/virtualmachines/VM1",
            effective_cost=Decimal("7"),
            x_provider="azure",
        ),
    ]
    any_wh.insert_arrow("focus_costs", focus_table(costs))
    rep = violations_report(any_wh, period="2026-11", now=NOW)
    teams = {t: (n, c) for t, n, c, _ in rep.teams}
    assert teams["ml"] == (2, Decimal("110.75"))
    assert teams["data"] == (1, Decimal("0"))
    assert teams["(no team)"] == (1, Decimal("7"))
    assert teams["=HYPERLINK(1)"][0] == 1
    assert rep.path.parent == finops_home / "reports" and rep.path.read_text() == rep.text
    assert "110.75" in rep.text and "Idle-policy decisions" in rep.text
    csv_text = rep.csv_path.read_text()
    assert "'=HYPERLINK(1)" in csv_text and "\n=HYPERLINK" not in csv_text
    only_azure = violations_report(any_wh, period="2026-11", provider="azure", now=NOW)
    assert [(t, n) for t, n, _, _ in only_azure.teams] == [("(no team)", 1)]
