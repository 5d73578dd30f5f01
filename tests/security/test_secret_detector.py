"""One secret detector for finops.yaml: key names and value patterns; never echoes a value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.config import ConfigError, parse_config
from finops.secret_scan import find_secrets, secret_key, secret_value
from tests.fixtures.hostile import hostile_text

SECRET_KEYS = [
    "password",
    "passwd",
    "pwd",
    "db_pass",
    "credentials",
    "credential",
    "authorization",
    "key",
    "api_key",
    "apiKey",
    "APIKEY",
    "secret",
    "client_secret",
    "token",
    "sas_token",
    "access_token",
    "private_key",
    "access_key_id",
    "webhook_url",
    "slack-webhook",
    "auth_token",
    "bearer",
    "passphrase",
    "Secret-Key",
]
HARMLESS_KEYS = [
    "max_tokens",
    "num_tokens",
    "tag_key",
    "tag_keys",
    "ssh_public_key",
    "ssh_key_name",
    "name",
    "conn_id",
    "keyword",
    "monkey",
    "tokenizer",
    "passes",
    "bypass",
    "authors",
    "team",
    "sort_key",
    "primary_key",
]
SECRET_VALUES = {
    "AKIAIOSFODNN7EXAMPLE": "AWS access key",
    "ASIAY34FZKBOKMUTVV7A": "AWS access key",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx": "Slack token",
    "xoxp-1234-5678-90ab-cdef": "Slack token",
    "postgresql://finops:hunter2@db.internal/finops": "credentials in a URL",
    "https://token@github.com/org/repo": "credentials in a URL",
    "https://hooks.slack.com/services/T000/B000/XXXXXXXX": "webhook URL",
    "https://acme.webhook.office.com/webhookb2/1-2-3@4/IncomingWebhook/abc/def": "webhook URL",
    "https://outlook.office.com/webhook/abc@def/IncomingWebhook/ghi/jkl": "webhook URL",
    "https://prod-12.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=Zx9": "webhook URL",
    "https://discord.com/api/webhooks/123/abc": "webhook URL",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----": "private key",
    "-----BEGIN OPENSSH PRIVATE KEY-----": "private key",
    "ghp_" + "a" * 36: "GitHub token",
    "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=abc==;": "Azure storage key",
}
HARMLESS_VALUES = [
    "https://prices.azure.com/api/retail/prices",
    "#ml-costs",
    "ml@example.com",
    "AKIA",
    "xoxb",
    "s3://bucket/prefix",
    "team",
    "https://cloud.lambda.ai/api/v1",
    "ssh-ed25519 AAAAC3Nza... ops@host",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_key_names_are_refused(key):
    assert secret_key(key), key
    with pytest.raises(ConfigError, match="secrets are not allowed"):
        parse_config({"prices": {"azure": {key: "x"}}})


@pytest.mark.parametrize("key", HARMLESS_KEYS)
def test_harmless_key_names_pass(key):
    assert not secret_key(key), key
    assert find_secrets({"prices": {"azure": {key: "x"}}}) == []


@pytest.mark.parametrize("value, kind", SECRET_VALUES.items())
def test_secret_values_under_innocent_keys_are_refused_and_not_echoed(value, kind):
    assert secret_value(value) == kind
    with pytest.raises(ConfigError) as e:
        parse_config({"prices": {"azure": {"base_url": f"see {value} here"}}})
    assert "prices.azure.base_url" in str(e.value) and kind in str(e.value)
    assert value not in str(e.value) and value[:12] not in str(e.value)


@pytest.mark.parametrize("value", HARMLESS_VALUES)
def test_harmless_values_pass(value):
    assert secret_value(value) is None


_SECRET = st.sampled_from(sorted(SECRET_VALUES))
_HARMLESS_KEY = st.sampled_from(HARMLESS_KEYS)


@given(
    before=hostile_text(3),
    secret=_SECRET,
    after=hostile_text(3),
    path=st.lists(_HARMLESS_KEY, min_size=1, max_size=4),
    in_list=st.booleans(),
)
def test_property_a_secret_anywhere_is_found_by_path_without_its_value(before, secret, after, path, in_list):
    value: object = f"{before} {secret} {after}"
    for k in reversed(path):
        value = {k: [value] if in_list else value}
    found = find_secrets(value)
    assert found and all(secret not in why and secret not in where for where, why in found)
    assert found[0][0].startswith(path[0])


@given(key=hostile_text(3))
def test_property_detector_takes_any_key_without_failing(key):
    assert isinstance(secret_key(key), bool)
    find_secrets({key: key, "x": [key, {key: None}]})
