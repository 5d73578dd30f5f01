"""finops.yaml `anomaly:` thresholds reach the detector; bad values name their key."""

from __future__ import annotations

import pytest

from finops.anomaly.detect import Thresholds
from finops.anomaly.settings import AnomalyConfigError, parse_settings


def test_defaults_are_the_detectors():
    s = parse_settings(None)
    d = Thresholds()
    assert (s.abs_floor, s.pct, s.z, s.drop_pct) == (d.abs_floor, d.pct, d.z, d.drop_pct)


def test_drop_pct_per_monitor_overrides_the_section():
    s = parse_settings(
        {"drop_pct": 0.8, "monitors": [{"type": "service", "drop_pct": 0.5}, {"type": "account"}]}
    )
    assert [s.drop_pct_for(m) for m in s.monitors] == [0.5, 0.8]


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"drop_pct": 1.5}, "anomaly.drop_pct"),
        ({"monitors": [{"type": "team", "drop_pct": 0}]}, "anomaly.monitors.0.drop_pct"),
    ],
)
def test_bad_drop_pct_names_the_key(section, key):
    with pytest.raises(AnomalyConfigError, match=key.replace(".", r"\.")):
        parse_settings(section)
