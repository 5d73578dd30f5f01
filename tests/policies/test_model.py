"""Policy YAML validation: clear errors naming file + key; the shipped examples load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finops.policies.model import PolicyError, load_all, load_policy_file, parse_policies

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "body,where,why",
    [
        (
            "policies:\n  - name: x\n    kind: idle\n    idle: {hours: 8, gpu_util_below: 500}\n",
            "policies[0].idle.gpu_util_below",
            "less than or equal to 100",
        ),
        (
            "policies:\n  - name: x\n    kind: tags\n    required_tags: [{key: team, pattern: '(['}]\n",
            "policies[0].required_tags[0].pattern",
            "not a valid regex",
        ),
        (
            "policies:\n  - name: x\n    kind: idle\n    idle: {hours: 8, gpu_util_below: 5}\n    off_hours: {timezone: Mars/Base}\n",
            "policies[0].off_hours.timezone",
            "unknown time zone",
        ),
        (
            "policies:\n  - name: x\n    kind: idle\n    idle: {hours: 8, gpu_util_below: 5}\n    action: terminate\n",
            "policies[0]",
            "allow_terminate",
        ),
        (
            "policies:\n  - name: x\n    kind: tags\n    required_tags: [{key: team}]\n    action: stop\n",
            "policies[0]",
            "never stop",
        ),
        ("policies:\n  - name: x\n    kind: idle\n", "policies[0]", "needs an idle rule"),
        (
            "policies:\n  - name: x\n    kind: idle\n    idle: {hours: 8, gpu_util_below: 5}\n    max_actions: 3\n",
            "policies[0].max_actions",
            "Extra inputs",
        ),
        (
            "policies:\n  - name: Bad Name\n    kind: tags\n    required_tags: [{key: a}]\n",
            "policies[0].name",
            "a-z",
        ),
        ("targets:\n  - {name: g, provider: gcp}\n", "targets[0]", "need account"),
    ],
)
def test_errors_name_file_and_key(tmp_path, body, where, why):
    f = _write(tmp_path, body)
    with pytest.raises(PolicyError) as e:
        load_policy_file(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}: {where}") and why in msg, msg


def test_bad_yaml_and_duplicates(tmp_path):
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy_file(_write(tmp_path, "policies: [\n"))
    body = "policies:\n  - {name: dup, kind: tags, required_tags: [{key: a}]}\n"
    _write(tmp_path, body, "a.yaml")
    _write(tmp_path, body, "b.yml")
    with pytest.raises(PolicyError, match="'dup' already defined"):
        load_all(tmp_path)
    with pytest.raises(PolicyError, match="expected a mapping"):
        parse_policies(["x"])


def test_marking_policies_need_distinct_mark_tags(tmp_path):
    _write(
        tmp_path,
        "policies:\n"
        "  - {name: a, kind: idle, action: mark, idle: {hours: 1, gpu_util_below: 5}}\n"
        "  - {name: b, kind: idle, action: stop, idle: {hours: 2, gpu_util_below: 5}}\n",
    )
    with pytest.raises(PolicyError, match="both use mark_tag"):
        load_all(tmp_path)
    [t] = parse_policies({"policies": [{"name": "t", "kind": "tags", "required_tags": [{"key": "a"}]}]})
    assert t.mark_tag == "finops-tags-marked"


def test_stop_policy_default_scope_excludes_lambda():
    [p] = parse_policies(
        {
            "policies": [
                {"name": "s", "kind": "idle", "action": "stop", "idle": {"hours": 1, "gpu_util_below": 5}}
            ]
        }
    )
    assert p.scope.providers == ["aws", "gcp", "azure"]
    assert p.max_actions_per_run == 10 and p.grace_hours == 24


def test_shipped_examples_load():
    policies, targets = load_all(REPO / "include" / "policies")
    by_name = {p.name: p for p in policies}
    idle = by_name["idle-gpu-8h"]
    assert idle.idle and idle.idle.hours == 8 and idle.idle.gpu_util_below == 5
    assert idle.grace_hours == 24 and idle.max_actions_per_run == 10 and idle.off_hours
    # the opt-in is the one the shipped IAM policy's StopInstances / CreateTags conditions name
    iam = json.loads((REPO / "include" / "iam" / "finops-stop-instances-policy.json").read_text())
    conds = {
        k.removeprefix("aws:ResourceTag/") + "=" + v
        for s in iam["Statement"]
        if s["Effect"] == "Allow"
        for k, v in s.get("Condition", {}).get("StringEquals", {}).items()
    }
    assert conds == {idle.opt_in_tag}
    assert by_name["required-tags"].kind == "tags"
    assert [t.name for t in targets] == ["aws-main"]


def test_iam_policy_only_stops_opted_in_and_cannot_grant_itself():
    doc = json.loads((REPO / "include" / "iam" / "finops-stop-instances-policy.json").read_text())
    stmts = doc["Statement"]
    stop = [
        s
        for s in stmts
        if "ec2:StopInstances" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert len(stop) == 1 and stop[0]["Effect"] == "Allow"
    assert stop[0]["Condition"]["StringEquals"] == {"aws:ResourceTag/finops:auto-stop": "enabled"}
    deny = [
        s for s in stmts if s["Effect"] == "Deny" and {"ec2:CreateTags", "ec2:DeleteTags"} <= set(s["Action"])
    ]
    assert deny and deny[0]["Resource"] == "*"
    assert "finops:auto-stop" in deny[0]["Condition"]["ForAnyValue:StringEquals"]["aws:TagKeys"]
    # No Allow anywhere grants tag writes on the opt-in key, nor any terminate.
    for s in stmts:
        acts = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        if s["Effect"] == "Allow":
            assert "ec2:TerminateInstances" not in acts and "ec2:*" not in acts and "*" not in acts
            keys = s.get("Condition", {}).get("ForAllValues:StringEquals", {}).get("aws:TagKeys", [])
            assert "finops:auto-stop" not in keys
            if {"ec2:CreateTags", "ec2:DeleteTags"} & set(acts):
                assert keys == ["finops-idle-marked"]
