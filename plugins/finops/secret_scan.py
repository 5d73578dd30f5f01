"""The one secret detector for configuration: key names that hold secrets, and values that are
secrets whatever key they sit under. Pure (no I/O); finops.config refuses what it finds.

Key names are split into words (snake, kebab, dot and camelCase), so `max_tokens`, `tag_key`
and `ssh_public_key` pass while `api_key`, `apiKey`, `pwd` and `credentials` do not. Values
are matched on the shapes providers give their credentials (AWS access keys, Slack tokens,
webhook URLs, user:password in a URL, PEM private keys). A finding names the key path and the
kind of secret, never the value: the point is to keep it out of logs.
"""

from __future__ import annotations

import re
from typing import Any

# A word that makes a key a secret wherever it appears in the name.
_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "creds",
        "authorization",
        "token",
        "tokens",
        "apikey",
        "bearer",
        "sas",
        "webhook",
        "webhooks",
        "privatekey",
    }
)
# `key` is a secret when it ends the name (`key`, `api_key`, `account_key`), or follows `access` /
# `private` anywhere (`access_key_id`), unless a qualifier says what harmless key it is.
_HARMLESS_KEY_QUALIFIERS = frozenset(
    {
        "tag",
        "public",
        "sort",
        "primary",
        "foreign",
        "partition",
        "dedup",
        "group",
        "label",
        "column",
        "cache",
        "idempotency",
        "dimension",
        "join",
        "lookup",
    }
)
# `tokens` counted, not given: max_tokens, num_tokens.
_COUNT_WORDS = frozenset({"max", "min", "num", "n", "total", "count", "limit"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_VALUE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "AWS access key",
        re.compile(r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])"),
    ),
    ("Slack token", re.compile(r"\bxox[abposre]-[0-9A-Za-z-]{8,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    (
        "webhook URL",
        re.compile(
            r"hooks\.slack(?:-gov)?\.com/|\.webhook\.office\.com/|outlook\.office(?:365)?\.com/webhook"
            r"|logic\.azure\.com(?::\d+)?/workflows/|discord(?:app)?\.com/api/webhooks/",
            re.I,
        ),
    ),
    ("credentials in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s@?#]+@", re.I)),
    (
        "Azure storage key",
        re.compile(r"\bAccountKey=|\bSharedAccessSignature=|[?&]sig=[A-Za-z0-9%+/=]{16,}", re.I),
    ),
]


def key_words(key: str) -> list[str]:
    """`apiKey` -> [api, key]; `ssh_public_key` -> [ssh, public, key]; `APIKEY` -> [apikey]."""
    return [w.lower() for w in _WORD.findall(key)]


def secret_key(key: object) -> bool:
    """Whether a config key name is one a secret goes under."""
    if not isinstance(key, str):
        return False
    words = key_words(key)
    for i, w in enumerate(words):
        before = words[i - 1] if i else ""
        if w in ("token", "tokens") and before in _COUNT_WORDS:
            continue
        if w in _SECRET_WORDS:
            return True
        if (
            w in ("key", "keys")
            and before not in _HARMLESS_KEY_QUALIFIERS
            and (
                i == len(words) - 1 or before in ("access", "private", "secret", "api", "account", "signing")
            )
        ):
            return True
    return False


def secret_value(value: object) -> str | None:
    """The kind of secret `value` contains ("AWS access key", ...), or None."""
    if not isinstance(value, str):
        return None
    for kind, pattern in _VALUE_PATTERNS:
        if pattern.search(value):
            return kind
    return None


def find_secrets(node: Any, skip_keys: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(path, what) for every secret-looking key or value, in document order; iterative, so a
    deep document cannot exhaust the stack. Entries under a key ending in one of `skip_keys`
    are left to the caller (finops.config checks conn_id values its own way)."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any, Any]] = [("", None, node)]
    while stack:
        path, key, value = stack.pop()
        if isinstance(key, str) and skip_keys and key.endswith(skip_keys):
            continue
        if secret_key(key):
            found.append((path, f"the key name {key!r} is one secrets go under"))
            continue  # one finding per secret key, whatever it holds
        if isinstance(value, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), k, v) for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", None, v) for i, v in enumerate(value)]))
        else:
            kind = secret_value(value)
            if kind:
                found.append((path or "(root)", f"the value looks like a secret: {kind}"))
    return found
