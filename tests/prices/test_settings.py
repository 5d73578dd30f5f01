from __future__ import annotations

import pytest

from finops.config import ConfigError
from finops.prices.jobs import plan_jobs
from finops.prices.settings import parse_prices


def test_defaults_and_aliases():
    s = parse_prices({"lambda": {"auth": "basic"}, "aws": {"regions": ["eu-west-1"]}})
    assert s.lambda_cloud.auth == "basic" and s.aws.regions == ["eu-west-1"]
    assert s.azure.base_url == "https://prices.azure.com/api/retail/prices"
    assert parse_prices(None).gcp.service_id == "6F81-5844-456A"


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ({"aws": {"lookback_days": 365}}, "prices.aws.lookback_days"),
        ({"lambda": {"auth": "digest"}}, "prices.lambda.auth"),
        ({"azure": {"region": ["eastus"]}}, "prices.azure.region"),
    ],
)
def test_errors_name_the_key(section, where):
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        parse_prices(section)


def test_plan_jobs_shapes_and_validation():
    s = parse_prices(
        {
            "aws": {"regions": ["us-east-1", "us-west-2"]},
            "azure": {"regions": ["eastus"]},
            "gcp": {"regions": ["us-central1", "us-east4"]},
        }
    )
    jobs = plan_jobs(s)
    assert [(j["provider"], j["region"]) for j in jobs] == [
        ("aws", "us-east-1"),
        ("aws", "us-west-2"),
        ("azure", "eastus"),
        ("gcp", "us-central1,us-east4"),
        ("lambda", "global"),
    ]
    back = plan_jobs(s, provider="aws", regions=["eu-central-1"], families=["p5e"], lookback_days=60)
    assert back == [{"provider": "aws", "region": "eu-central-1", "families": ["p5e"], "lookback_days": 60}]
    for bad in (
        {"provider": "oracle"},
        {"provider": "aws", "regions": ["us-east-1; drop"]},
        {"provider": "azure", "regions": ["East US"]},
        {"provider": "aws", "families": ["p5*"]},
    ):
        with pytest.raises(ValueError):
            plan_jobs(s, **bad)
    assert plan_jobs(parse_prices({"lambda": {"enabled": False}}), provider="lambda") == []


def test_plan_all_skips_names_of_other_clouds():
    s = parse_prices({})
    jobs = plan_jobs(s, regions=["us-east-1", "eastus", "us-central1"], families=["p5", "Standard_ND", "a3"])
    got = {(j["provider"], j["region"], tuple(j.get("families", ()))) for j in jobs}
    # "a3" is also a well-formed AWS family name and "p5" a well-formed GCP series (each matches
    # no type of the other cloud: harmless); "Standard_ND" is neither
    assert got == {
        ("aws", "us-east-1", ("p5", "a3")),
        ("azure", "eastus", ("Standard_ND",)),
        ("gcp", "us-central1", ("p5", "a3")),
        ("lambda", "global", ()),
    }
    # a provider left with nothing valid is skipped, not run with its defaults
    assert [j["provider"] for j in plan_jobs(s, regions=["eastus"])] == ["azure", "lambda"]
