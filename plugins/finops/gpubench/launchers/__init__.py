"""Per-cloud launchers (AWS EC2, GCP Compute Engine, Azure VMs, Lambda Cloud) behind one
protocol (base.Launcher); `for_target()` picks one for a configured target."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finops.gpubench.launchers.base import Launcher
    from finops.gpubench.settings import Target


def for_target(target: Target, max_running: int = 8) -> Launcher:
    """A launcher for the target's cloud, built from its Airflow connection."""
    if target.provider == "aws":
        from finops.gpubench.launchers.aws import AwsLauncher

        return AwsLauncher.from_conn(target.connection, target, max_running)
    if target.provider == "gcp":
        from finops.gpubench.launchers.gcp import GcpLauncher

        return GcpLauncher.from_conn(target.connection, target, max_running)
    if target.provider == "azure":
        from finops.gpubench.launchers.azure import AzureLauncher

        return AzureLauncher.from_conn(target.connection, target, max_running)
    from finops.gpubench.launchers.lambda_cloud import LambdaLauncher

    return LambdaLauncher.from_conn(target.connection, target, max_running)
