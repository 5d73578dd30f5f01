"""Billing extractors, one module per provider (see registry)."""

from finops.exceptions import FinopsError


class DeliveryError(FinopsError, RuntimeError):
    """A delivery that cannot be taken as it is (a manifest unreadable or listing files that are
    not there, an export run incomplete): refused before conversion, recorded in load_log."""
