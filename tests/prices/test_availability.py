"""The cheapest-place ranking never proposes a type a checked region does not offer."""

from __future__ import annotations

from finops.gpubench.pricing import Job, Offer, cheapest_place_to_run
from finops.prices import queries, store
from finops.prices.records import Offering


def _offer(provider: str, region: str, itype: str, price: float) -> Offer:
    return Offer(provider, region, itype, "ondemand", price, 8, {"amp_bf16": 100.0}, gpu_model="H100-80GB")


def test_ranking_skips_types_a_checked_region_does_not_offer(any_wh):
    store.replace_availability(
        any_wh,
        "gcp",
        [
            Offering("gcp", "us-central1", "us-central1-a", "a3-highgpu-8g", "test"),
            Offering("gcp", "us-east4", "us-east4-a", "a3-megagpu-8g", "test", "NotAvailableForSubscription"),
        ],
    )
    offered = queries.offered_places(any_wh)
    assert offered == {("gcp", "us-central1"): {"a3-highgpu-8g"}, ("gcp", "us-east4"): set()}
    offers = [
        _offer("gcp", "us-east4", "a3-megagpu-8g", 50.0),  # cheapest, but restricted there
        _offer("gcp", "us-central1", "a3-megagpu-8g", 60.0),  # not offered in us-central1
        _offer("gcp", "us-central1", "a3-highgpu-8g", 88.0),
        _offer("lambda", "global", "gpu_8x_h100_sxm5", 95.0),  # never checked: not judged
    ]
    ranked = cheapest_place_to_run(Job(steps=1000), offers, offered)
    assert [(r.offer.region, r.offer.instance_type) for r in ranked if r.feasible] == [
        ("us-central1", "a3-highgpu-8g"),
        ("global", "gpu_8x_h100_sxm5"),
    ]
    assert {r.note for r in ranked if not r.feasible} == {
        "a3-megagpu-8g is not offered in gcp us-east4",
        "a3-megagpu-8g is not offered in gcp us-central1",
    }
    # without availability data the ranking is the plain price order
    assert cheapest_place_to_run(Job(steps=1000), offers)[0].offer.price_per_hour == 50.0


def test_a_new_answer_replaces_the_region_and_an_empty_one_keeps_it(any_wh):
    put = store.replace_availability
    put(any_wh, "aws", [Offering("aws", "us-east-1", "us-east-1a", "p5.48xlarge", "t")])
    put(any_wh, "aws", [Offering("aws", "us-east-1", "us-east-1c", "p6-b200.48xlarge", "t")])
    assert queries.offered_places(any_wh) == {("aws", "us-east-1"): {"p6-b200.48xlarge"}}
    assert put(any_wh, "aws", []) == 0
    assert queries.offered_places(any_wh, "aws") == {("aws", "us-east-1"): {"p6-b200.48xlarge"}}
