"""Conservation for every rule type: what goes in comes out, to the last quantum."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import date
from decimal import Decimal as D

import pytest

from finops.allocation.engine import (
    CostRow,
    allocate,
    canonical_tags,
    chargeback,
    gpu_view,
    norm_key,
    spot_share,
)
from finops.allocation.rules import parse_rules

DAY = date(2026, 10, 5)


def row(cost: str, tags: dict | None = None, eff: str | None = None, day: date = DAY, **kw) -> CostRow:
    base = dict(
        day=day,
        billing_period=day.isoformat()[:7],
        provider="aws",
        billing_account_id="123",
        service_name="EC2",
        currency="USD",
        billed=D(cost),
        effective=D(eff if eff is not None else cost),
        tags=tags or {},
    )
    base.update(kw)
    return CostRow(**base)


def totals(alloc, key=lambda a: a.team):
    out = defaultdict(D)
    for a in alloc:
        out[key(a)] += a.cost
    return dict(out)


def assert_conserved(rows, alloc, view):
    src = defaultdict(D)
    for r in rows:
        src[(r.day, r.currency)] += r.amount(view)
    assert totals(alloc, key=lambda a: (a.day, a.currency)) == {k: v for k, v in src.items()}


def test_tag_key_aliases_fold_onto_team():
    assert norm_key("user:Team") == norm_key("user_team") == norm_key("TEAM") == "team"
    keys = {"team": ["team", "Team", "user:team", "user_team"]}
    for k in ["Team", "team", "user:team", "user_team", "USER:TEAM"]:
        assert canonical_tags({k: " ml-research "}, keys)["team"] == "ml-research"


def test_direct_by_tag_alias_and_case_insensitive_team():
    rules = parse_rules({"teams": [{"name": "ml-research", "cost_centre": "CC-1"}]})
    rows = [
        row("10.5", {"Team": "ML-Research"}),
        row("2.25", {"user:team": "ml-research"}),
        row("1", {"user_team": "other"}),
    ]
    alloc = allocate(rows, rules, "billed")
    assert totals(alloc) == {"ml-research": D("12.75"), "other": D("1")}
    assert {a.cost_centre for a in alloc if a.team == "ml-research"} == {"CC-1"}
    assert_conserved(rows, alloc, "billed")


def test_account_project_subscription_and_tag_rules_first_match_wins():
    rules = parse_rules(
        {
            "rules": [
                {"team": "acct", "match": {"accounts": ["111"]}},
                {"team": "proj", "match": {"projects": ["p-1"]}},
                {"team": "sub", "match": {"subscriptions": ["s-1"], "providers": ["azure"]}},
                {"team": "envtag", "match": {"tags": {"Env": ["prod"]}}},
                {"team": "never", "match": {"accounts": ["111"]}},
            ]
        }
    )
    rows = [
        row("1", billing_account_id="111"),
        row("2", sub_account_id="p-1", provider="gcp"),
        row("3", sub_account_id="s-1", provider="azure"),
        row("4", {"env": "prod"}),
        row("5", sub_account_id="s-1", provider="aws"),
        row("6", {"team": "tagged"}, billing_account_id="111"),
    ]
    alloc = allocate(rows, rules, "billed")
    assert totals(alloc) == {
        "acct": D(1),
        "proj": D(2),
        "sub": D(3),
        "envtag": D(4),
        "unallocated": D(5),
        "tagged": D(6),
    }
    assert_conserved(rows, alloc, "billed")


@pytest.mark.parametrize(
    "method,expected",
    [
        ("even", {"a": D("103.3333333334"), "b": D("23.3333333333"), "c": D("3.3333333333")}),
        ("proportional", {"a": D("108.3333333333"), "b": D("21.6666666667"), "c": D("0")}),
    ],
)
def test_shared_even_and_proportional(method, expected):
    rules = parse_rules(
        {
            "shared": [{"name": "support", "match": {"services": ["Support"]}, "method": method}],
            "teams": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        }
    )
    rows = [
        row("100", {"team": "a"}),
        row("20", {"team": "b"}),
        row("-0", {"team": "c"}),
        row("10", service_name="Support"),
    ]
    alloc = allocate(rows, rules, "billed")
    got = totals(alloc)
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
    assert_conserved(rows, alloc, "billed")
    assert {a.rule for a in alloc if a.allocation == "shared"} == {"shared:support"}


def test_shared_fixed_percentages():
    rules = parse_rules(
        {
            "shared": [
                {
                    "name": "hub",
                    "match": {"accounts": ["999"]},
                    "method": "fixed",
                    "percentages": {"a": "33.3", "b": "33.3", "c": "33.4"},
                }
            ]
        }
    )
    rows = [
        row("0.0000000007", billing_account_id="999"),
        row("1000", billing_account_id="999"),
        row("-3.21", billing_account_id="999"),
    ]  # a refund in the shared pool
    alloc = allocate(rows, rules, "billed")
    got = totals(alloc)
    assert sum(got.values()) == D("996.7900000007")
    assert got["c"] == D("332.9278600003")  # 33.4 % of 996.7900000007 up to one remainder quantum
    assert_conserved(rows, alloc, "billed")


def test_shared_with_no_teams_goes_to_unallocated():
    rules = parse_rules({"shared": [{"name": "x", "match": {"services": ["Support"]}}]})
    rows = [row("5", service_name="Support")]
    alloc = allocate(rows, rules, "billed")
    assert totals(alloc) == {"unallocated": D(5)}


@pytest.mark.parametrize("method", ["even", "proportional"])
def test_unallocated_spread(method):
    rules = parse_rules({"unallocated": {"mode": "spread", "method": method}})
    rows = [row("30", {"team": "a"}), row("10", {"team": "b"}), row("8"), row("-1.5")]
    alloc = allocate(rows, rules, "billed")
    got = totals(alloc)
    assert "unallocated" not in got
    assert got == (
        {"a": D("33.25"), "b": D("13.25")} if method == "even" else {"a": D("34.875"), "b": D("11.625")}
    )
    assert {a.allocation for a in alloc} == {"direct", "spread"}


def test_unallocated_spread_without_any_team_keeps_bucket():
    rules = parse_rules({"unallocated": {"mode": "spread"}})
    alloc = allocate([row("8")], rules, "billed")
    assert totals(alloc) == {"unallocated": D(8)}


def test_billed_and_amortised_views_differ_and_both_conserve():
    rules = parse_rules({})
    rows = [
        row("100", {"team": "a"}, eff="62.5"),
        row("-40", {"team": "a"}, eff="0"),  # SP negation
        row("300", eff="25", service_name="Savings Plans"),
    ]  # upfront fee amortised away
    billed = allocate(rows, rules, "billed")
    amort = allocate(rows, rules, "amortised")
    assert totals(billed) == {"a": D(60), "unallocated": D(300)}
    assert totals(amort) == {"a": D("62.5"), "unallocated": D(25)}
    assert_conserved(rows, billed, "billed")
    assert_conserved(rows, amort, "amortised")


def test_random_mixture_conserves_every_day_and_currency():
    rng = random.Random(42)
    rules = parse_rules(
        {
            "teams": [{"name": t} for t in "abcd"],
            "rules": [{"team": "d", "match": {"accounts": ["acct-d"]}}],
            "shared": [
                {"name": "even", "match": {"services": ["S-even"]}, "method": "even"},
                {
                    "name": "prop",
                    "match": {"services": ["S-prop"]},
                    "method": "proportional",
                    "teams": ["a", "b"],
                },
                {
                    "name": "fix",
                    "match": {"services": ["S-fix"]},
                    "method": "fixed",
                    "percentages": {"a": "12.5", "c": "87.5"},
                },
            ],
            "unallocated": {"mode": rng.choice(["bucket", "spread"])},
        }
    )
    rows = []
    for i in range(600):
        amount = D(rng.randint(-5 * 10**10, 10**13)).scaleb(-10)
        rows.append(
            row(
                str(amount),
                {"Team": rng.choice("abc")} if rng.random() < 0.5 else {},
                eff=str((amount * D("0.7")).quantize(D("1E-10"))),
                day=date(2026, 10, 1 + i % 9),
                currency=rng.choice(["USD", "EUR"]),
                billing_account_id=rng.choice(["acct-d", "x"]),
                service_name=rng.choice(["EC2", "S-even", "S-prop", "S-fix"]),
            )
        )
    for view in ("billed", "amortised"):
        alloc = allocate(rows, rules, view)
        assert_conserved(rows, alloc, view)
        cb = chargeback(alloc)
        for cur in ("USD", "EUR"):
            src = sum((r.amount(view) for r in rows if r.currency == cur), D(0))
            lines = [c for c in cb if c.currency == cur]
            assert sum((c.total_cost for c in lines), D(0)) == src
            assert sum((c.total_cents for c in lines), D(0)) == src.quantize(D("0.01"))


def test_lines_and_gpu_view():
    rules = parse_rules({})
    rows = [
        row(
            "98.3", {"team": "a"}, instance_type="p5.48xlarge", pricing_category="Dynamic", list_cost=D("300")
        ),
        row(
            "300", {"team": "a"}, instance_type="p5.48xlarge", pricing_category="Standard", list_cost=D("300")
        ),
        row(
            "20",
            {"team": "b"},
            instance_type="g4dn.xlarge",
            usage_type="USE1-SpotUsage:g4dn.xlarge",
            list_cost=D("50"),
        ),
        row(
            "7",
            {"team": "a"},
            service_category="Storage",
            service_name="S3",
            usage_type="TimedStorage-ByteHrs",
        ),
        row("3", {"team": "a"}, service_category="Networking", usage_type="USE1-DataTransfer-Out-Bytes"),
        row("1", {"team": "a"}, instance_type="m5.large", service_category="Compute"),
    ]
    alloc = allocate(rows, rules, "billed")
    lines = totals([a for a in alloc if a.team == "a"], key=lambda a: a.line)
    assert lines == {"gpu": D("398.3"), "storage": D(7), "egress": D(3), "compute": D(1)}
    cb = {c.team: c for c in chargeback(alloc)}
    assert (cb["a"].gpu_cost, cb["a"].storage_cost, cb["a"].egress_cost) == (D("398.3"), D(7), D(3))
    gpu = gpu_view(rows, rules, "billed")
    by = {(g.team, g.gpu_model, g.purchase_option): g for g in gpu}
    assert by[("a", "H100", "spot")].savings == D("201.7")
    assert by[("a", "H100", "on_demand")].savings == D(0)
    assert by[("b", "T4", "spot")].savings == D(30)
    share = spot_share(gpu)
    assert share["b"] == 1 and share["a"] == D("98.3") / D("398.3")
