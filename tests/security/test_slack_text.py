"""Slack Block Kit payloads built from hostile strings: mrkdwn stays text, links stay http(s)."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from finops.alerts.events import AlertEvent
from finops.alerts.slack import FIELD_MAX, HEADER_MAX, SECTION_MAX, build_message
from tests.fixtures.hostile import hostile_text

_ENTITY_OR_PLAIN = re.compile(r"&(?!(amp|lt|gt);)")


def _texts(payload: dict) -> list[str]:
    out = [payload["text"]]
    for b in payload["blocks"]:
        if "text" in b:
            out.append(b["text"]["text"])
        out += [e["text"] for e in b.get("elements", []) if e.get("type") == "mrkdwn"]
        out += [f["text"] for f in b.get("fields", [])]
        out += [e["text"]["text"] for e in b.get("elements", []) if e.get("type") == "button"]
    return out


@given(
    title=hostile_text(),
    summary=hostile_text(),
    team=hostile_text(6),
    facts=st.dictionaries(hostile_text(4), hostile_text(), max_size=25),
    links=st.dictionaries(
        hostile_text(3),
        st.one_of(hostile_text(4), st.just("https://x.example/a b"), st.just("javascript:alert(1)")),
        max_size=6,
    ),
)
def test_property_slack_payload_is_inert_text(title, summary, team, facts, links):
    ev = AlertEvent(kind="anomaly", title=title, team=team, summary=summary, facts=facts, links=links)
    payload = build_message(ev)
    json.dumps(payload)  # serialisable as sent
    for text in _texts(payload):
        assert "<" not in text and ">" not in text, text  # no <!channel>, <@U..>, <url|label>
        assert not _ENTITY_OR_PLAIN.search(text), text  # every & is one of the three entities
    blocks = payload["blocks"]
    assert len(blocks) <= 50 and len(blocks[0]["text"]["text"]) <= HEADER_MAX
    for b in blocks:
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= SECTION_MAX and b["text"]["verbatim"] is True
        for f in b.get("fields", []):
            assert len(f["text"]) <= FIELD_MAX and f["verbatim"] is True
        for e in b.get("elements", []):
            if e.get("type") == "button":
                assert re.fullmatch(r"https?://[^\s<>|]+", e["url"]), e["url"]
