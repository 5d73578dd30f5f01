"""Hypothesis profiles for the property tests of hostile-input boundaries.

`short` (the default, what `make test` runs): few examples per property, no deadline (the
suite shares 2 cores with xdist workers, so a per-example time limit would only measure
the machine). `long`, on demand: `HYPOTHESIS_PROFILE=long pytest tests/security`, thousands
of examples per property. No example database: nothing is written into the checkout.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "short",
    max_examples=30,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "long",
    max_examples=3000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "short"))
