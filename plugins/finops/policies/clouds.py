"""Build `engine.Cloud` pairs (inventory + actions) from policy `targets`, with credentials
taken only from Airflow connections. A target without conn_id gets no credentials, which
only makes sense against a local server (base_url) and is refused otherwise. Tokens and the
HTTP transport (proxies, CA bundle) come from finops.connections, as everywhere else."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from finops import connections
from finops.policies.engine import Cloud
from finops.policies.model import Policy, PolicyError, Target
from finops.policies.rest import TokenProvider


def _lambda_token(conn_id: str) -> TokenProvider:
    from airflow.sdk import BaseHook

    key = BaseHook.get_connection(conn_id).password
    return lambda: key


def _token(t: Target, make: Callable[[str], TokenProvider]) -> TokenProvider | None:
    if t.conn_id:
        return make(t.conn_id)
    if not t.base_url:
        raise PolicyError(f"target {t.name}: conn_id is required unless base_url points at a local server")
    return None


def build_clouds(target: Target, policy: Policy | None = None) -> Iterator[Cloud]:
    """One Cloud per region (AWS) or per account (others)."""
    if target.provider == "aws":
        from finops.policies.actions.aws import AwsActions
        from finops.policies.inventory.aws import AwsInventory

        for region in target.regions:
            conn = target.conn_id or "aws_default"
            inv = AwsInventory(conn, region, target.account)
            yield Cloud(inv, AwsActions(conn, region, ec2=inv.ec2))
    elif target.provider == "gcp":
        from finops.policies.actions.gcp import GcpActions
        from finops.policies.inventory.gcp import COMPUTE, MONITORING, GcpInventory

        ginv = GcpInventory(
            target.account or "",
            _token(target, connections.gcp_token),
            target.base_url or COMPUTE,
            target.monitoring_url or target.base_url or MONITORING,
            session=connections.http_session(target.conn_id),
        )
        yield Cloud(ginv, GcpActions(ginv))
    elif target.provider == "azure":
        from finops.policies.actions.azure import AzureActions
        from finops.policies.inventory.azure import ARM, AzureInventory

        ainv = AzureInventory(
            target.account or "",
            _token(target, connections.azure_token),
            target.base_url or ARM,
            target.gpu_metric_namespace,
            session=connections.http_session(target.conn_id),
        )
        yield Cloud(ainv, AzureActions(ainv))
    else:
        from finops.policies.actions.lambda_cloud import LambdaActions
        from finops.policies.inventory.lambda_cloud import LAMBDA, LambdaInventory

        linv = LambdaInventory(
            target.account or "lambda",
            _token(target, _lambda_token),
            target.base_url or LAMBDA,
            session=connections.http_session(target.conn_id),
        )
        yield Cloud(linv, LambdaActions(linv, allow_terminate=bool(policy and policy.allow_terminate)))
