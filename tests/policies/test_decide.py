"""Pure decisions on plain data: no cloud, no Airflow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from finops.policies.decide import (
    Resource,
    Series,
    check_tags,
    decide,
    evaluate_idle,
    format_mark,
    in_off_hours,
    parse_mark,
)
from finops.policies.model import OffHours, Policy, normalise_key, spellings

NOW = datetime(2026, 11, 18, 23, 0, tzinfo=UTC)  # a Wednesday


def pol(**over) -> Policy:
    base = {
        "name": "idle",
        "kind": "idle",
        "action": "stop",
        "min_age_hours": 1,
        "grace_hours": 24,
        "idle": {"hours": 8, "gpu_util_below": 5},
    }
    for k, v in over.items():
        base[k] = {**base[k], **v} if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return Policy.model_validate(base)


def res(tags=None, **kw) -> Resource:
    base = dict(
        provider="aws",
        account="111",
        region="us-east-1",
        resource_id="i-1",
        name="train-box",
        launched_at=NOW - timedelta(days=2),
        tags={"owner": "a@x", **(tags or {})},
        gpu_count=None,
    )
    return Resource(**{**base, **kw})


def gpu(value, hours=8.5, step_min=5, start_gap_h=0.0, label="0"):
    n = int(hours * 60 / step_min)
    return Series(
        "gpu",
        [
            (
                NOW - timedelta(minutes=step_min * i + 1 + start_gap_h * 60),
                value(i) if callable(value) else value,
            )
            for i in range(n)
        ],
        label,
    )


def test_idle_all_gpus_low():
    d = decide(pol(), res(), NOW, [gpu(1.0), gpu(4.9, label="1")])
    assert (d.verdict, d.action) == ("idle", "mark")
    assert {s["label"] for s in d.evidence["series"]} == {"0", "1"}


@pytest.mark.parametrize(
    "series,verdict",
    [
        ([], "no_metrics"),
        ([Series("gpu", [])], "no_metrics"),
        ([gpu(1.0, hours=3)], "partial_metrics"),  # 3h of 8h
        ([gpu(1.0, start_gap_h=1)], "partial_metrics"),  # stale: nothing in the last hour
        ([gpu(1.0, step_min=15)], "partial_metrics"),  # a third of the 5-min periods
        ([gpu(1.0), gpu(40.0, label="1")], "busy"),  # one busy GPU is enough
        ([gpu(lambda i: 90 if i == 50 else 0)], "busy"),  # one busy 5 minutes in 8h
        ([gpu(1.0, hours=2), gpu(50.0, hours=1, label="1")], "busy"),  # busy wins over partial
        ([gpu(float("nan"))], "no_metrics"),
    ],
)
def test_missing_partial_or_busy_is_never_idle(series, verdict):
    d = decide(pol(), res(), NOW, series)
    assert d.verdict == verdict and d.action in ("none",)


def test_known_gpu_count_requires_every_gpu():
    assert decide(pol(), res(gpu_count=8), NOW, [gpu(0.0)]).verdict == "partial_metrics"


def test_cpu_and_network_limits():
    p = pol(idle={"cpu_util_below": 10, "network_below_bytes_per_s": 1000})
    low_cpu = Series("cpu", gpu(3.0).points)
    assert decide(p, res(), NOW, [gpu(0.0), low_cpu]).verdict == "no_metrics"  # network needed, absent
    net = Series("network", gpu(10.0).points)
    assert decide(p, res(), NOW, [gpu(0.0), low_cpu, net]).verdict == "idle"
    assert decide(p, res(), NOW, [gpu(0.0), Series("cpu", gpu(60.0).points), net]).verdict == "busy"


def test_p95_aggregate_tolerates_one_blip():
    s = [gpu(lambda i: 90 if i == 50 else 0)]
    assert evaluate_idle(pol(idle={"aggregate": "p95"}), res(), s, NOW)[0] == "idle"


def test_grace_flow_and_marks():
    idle = [gpu(0.5)]
    fresh_mark = {"finops-idle-marked": format_mark(NOW - timedelta(hours=5))}
    old_mark = {"finops-idle-marked": format_mark(NOW - timedelta(hours=25))}
    assert decide(pol(), res(fresh_mark), NOW, idle).action == "wait"
    assert decide(pol(), res(old_mark), NOW, idle).action == "stop"
    assert decide(pol(), res(old_mark), NOW, [gpu(30.0)]).action == "unmark"
    assert decide(pol(), res(old_mark), NOW, []).action == "none"  # metrics gone: keep mark, never act
    assert decide(pol(), res({"finops-idle-marked": "garbage'; --"}), NOW, idle).action == "mark"
    assert decide(pol(action="mark"), res(old_mark), NOW, idle).action == "none"
    assert decide(pol(action="notify"), res(), NOW, idle).action == "notify"
    # Owner-less: marked, but never stopped unless the policy opts in.
    ownerless = res(old_mark)
    ownerless = Resource(**{**ownerless.__dict__, "tags": old_mark})
    assert decide(pol(), ownerless, NOW, idle).action == "notify"
    assert decide(pol(act_without_owner=True), ownerless, NOW, idle).action == "stop"


def test_mark_format_roundtrip_and_date_only_is_conservative():
    assert format_mark(NOW) == "20261118t2300z"
    assert parse_mark(format_mark(NOW)) == NOW
    assert parse_mark("2026-11-18") == datetime(2026, 11, 19, tzinfo=UTC)  # end of that day
    assert parse_mark("") is None and parse_mark("not a date") is None


def test_scope_exemptions_age_state():
    assert decide(pol(scope={"regions": ["eu-west-1"]}), res(), NOW, [gpu(0)]).verdict == "out_of_scope"
    assert decide(pol(scope={"accounts": ["222"]}), res(), NOW, [gpu(0)]).verdict == "out_of_scope"
    assert decide(pol(), res({"FinOps:Exempt": "yes"}), NOW, [gpu(0)]).verdict == "exempt"
    assert (
        decide(pol(exemptions={"tag": "keep=true"}), res({"keep": "false"}), NOW, [gpu(0)]).verdict == "idle"
    )
    assert decide(pol(exemptions={"name_patterns": ["train-*"]}), res(), NOW, [gpu(0)]).verdict == "exempt"
    assert decide(pol(exemptions={"accounts": ["111"]}), res(), NOW, [gpu(0)]).verdict == "exempt"
    assert decide(pol(), res(launched_at=NOW - timedelta(minutes=10)), NOW, [gpu(0)]).verdict == "too_young"
    assert decide(pol(), res(launched_at=None), NOW, [gpu(0)]).verdict == "too_young"
    assert decide(pol(), res(state="stopped"), NOW, [gpu(0)]).verdict == "not_running"
    # exempt resources are never touched, not even unmarked
    d = decide(pol(), res({"finops:exempt": "1", "finops-idle-marked": format_mark(NOW)}), NOW, [gpu(90)])
    assert d.action == "none"


def test_not_opted_in_is_reported_never_marked_or_stopped():
    """include/iam lets the package tag and stop only instances tagged finops:auto-stop=enabled:
    a mark or stop planned on any other one is refused by the cloud, yet it spent the run's cap."""
    p = pol(opt_in_tag="finops:auto-stop=enabled")
    old_mark = {"finops-idle-marked": format_mark(NOW - timedelta(hours=25))}
    idle = [gpu(0.5)]
    d = decide(p, res(), NOW, idle)
    assert (d.verdict, d.action) == ("idle", "report") and "not opted in" in d.reason
    assert decide(p, res({"finops:auto-stop": "disabled", **old_mark}), NOW, idle).action == "report"
    assert (
        decide(p, res({"Finops-Auto-Stop": "Enabled"}), NOW, idle).action == "mark"
    )  # any spelling of the key
    assert decide(p, res({"finops_auto-stop": "enabled", **old_mark}), NOW, idle).action == "stop"
    assert decide(p, res(), NOW, [gpu(40.0)]).verdict == "busy"
    assert (
        decide(pol(opt_in_tag="finops:auto-stop"), res({"finops:auto-stop": ""}), NOW, idle).action == "mark"
    )


def test_off_hours_with_time_zone():
    oh = OffHours(
        timezone="America/New_York", days=["mon", "tue", "wed", "thu", "fri"], start="19:00", end="07:00"
    )
    assert in_off_hours(oh, datetime(2026, 11, 18, 23, 30, tzinfo=UTC)) is False  # Wed 18:30 NY
    assert in_off_hours(oh, datetime(2026, 11, 19, 1, 0, tzinfo=UTC)) is True  # Wed 20:00 NY
    assert in_off_hours(oh, datetime(2026, 11, 19, 11, 30, tzinfo=UTC)) is True  # Thu 06:30 NY
    assert in_off_hours(oh, datetime(2026, 11, 19, 12, 30, tzinfo=UTC)) is False  # Thu 07:30 NY
    assert in_off_hours(oh, datetime(2026, 11, 22, 6, 0, tzinfo=UTC)) is False  # Sun 01:00 NY, Sat not listed
    old = {"finops-idle-marked": format_mark(NOW - timedelta(hours=30))}
    p = pol(off_hours={"timezone": "Europe/Berlin", "start": "09:00", "end": "17:00"})
    assert decide(p, res(old), NOW, [gpu(0)]).action == "wait"  # 00:00 Berlin: outside window


def test_tag_normalisation_and_rules():
    assert normalise_key("user:Team") == normalise_key(" team ") == normalise_key("TEAM") == "team"
    assert normalise_key("cost-center") == normalise_key("Cost Center") == normalise_key("cost.center")
    # what an unmark removes: every spelling of the mark, or the key itself when none is there
    tags = {"FinOps_Idle_Marked": "a", "finops-idle-marked": "b", "finops-idle": "c", "team": "ml"}
    assert spellings(tags, "finops-idle-marked") == ["FinOps_Idle_Marked", "finops-idle-marked"]
    assert spellings({"team": "ml"}, "finops-idle-marked") == ["finops-idle-marked"]
    p = Policy.model_validate(
        {
            "name": "t",
            "kind": "tags",
            "required_tags": [
                {"key": "team", "allowed": ["ml", "data"]},
                {"key": "env", "pattern": "prod|dev"},
                {"key": "owner", "aliases": ["created_by", "contact"]},
            ],
        }
    )
    tc = check_tags(p, res({"user:team": "ML", "Env": "prod", "created_by": "z"}))
    assert tc.compliant and tc.team == "ML"
    tc = check_tags(
        p, Resource("aws", "1", "r", "i", tags={"Team": "finance", "env": "production", "owner": " "})
    )
    assert tc.missing == ["owner"] and tc.invalid == ["team", "env"] and not tc.compliant
    d = decide(p, Resource("aws", "1", "r", "i", tags={"team": "ml"}), NOW)
    assert (d.verdict, d.action) == ("violation", "report")


def test_now_must_be_aware():
    with pytest.raises(ValueError):
        decide(pol(), res(), NOW.replace(tzinfo=None))


def test_mark_older_than_the_launch_is_replaced_not_obeyed():
    """Tags copied onto a new instance (launch template, "launch more like this", machine image)
    carry an old mark: obeying it would stop the instance with no warning and no grace."""
    idle = [gpu(0.5)]
    copied = {"finops-idle-marked": format_mark(NOW - timedelta(days=3))}
    d = decide(pol(), res(copied, launched_at=NOW - timedelta(hours=9)), NOW, idle)
    assert (d.verdict, d.action) == ("idle", "mark") and "older than the launch" in d.reason
    assert d.evidence["marked_at"] is None and d.evidence["ignored_mark"] == copied["finops-idle-marked"]
    # Our own mark, written after the launch, still counts (minute resolution tolerated).
    launched = NOW - timedelta(hours=30, seconds=30)
    ours = {"finops-idle-marked": format_mark(launched)}  # 30 s before the launch once truncated
    assert decide(pol(), res(ours, launched_at=launched), NOW, idle).action == "stop"
    assert decide(pol(), res(copied), NOW, idle).action == "mark"  # launched 2 days ago, mark from 3 days ago
