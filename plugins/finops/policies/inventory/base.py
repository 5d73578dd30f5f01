"""The interface every cloud's inventory and actions implement (engine depends only on this)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from finops.policies.decide import Resource, Series
from finops.policies.model import Policy


class Inventory(Protocol):
    provider: str

    @property
    def scope(self) -> tuple[str, str | None]:
        """(account, region) this inventory lists in full; region None: every region of the account."""

    def list_resources(self) -> list[Resource]:
        """Every instance of this account (all states), tags as a flat dict."""

    def refresh(self, resource: Resource) -> Resource | None:
        """The resource as it is now (None when it is gone); used for the action-time re-check."""

    def series(self, resource: Resource, policy: Policy, start: datetime, end: datetime) -> list[Series]:
        """GPU / CPU / network series for the policy's window (empty when the cloud has none)."""


class Actions(Protocol):
    provider: str
    supports_tags: bool

    def mark(self, resource: Resource, key: str, value: str, dry_run: bool) -> str: ...

    def unmark(self, resource: Resource, key: str, dry_run: bool) -> str: ...

    def stop(self, resource: Resource, dry_run: bool) -> str:
        """Stop (AWS / GCP), deallocate (Azure) or terminate (Lambda). Returns a result word."""
