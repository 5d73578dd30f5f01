"""finops.yaml from a hostile hand: bounded time and memory, one clear error, no traceback."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.config import MAX_CONFIG_BYTES, ConfigError, load_config
from tests.fixtures.hostile import hostile_text

# 9 levels of 9 aliases: 9**9 = 387M leaves from a few hundred bytes (the "billion laughs").
LAUGHS = (
    "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "prices: {x: *i}\n"
)


def _write(tmp_path, text: str | bytes):
    p = tmp_path / "finops.yaml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return p


def test_billion_laughs_is_refused_quickly(tmp_path):
    p = _write(tmp_path, LAUGHS)
    assert len(LAUGHS) < 600
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert time.monotonic() - t0 < 2
    assert str(p) in str(e.value) and "alias" in str(e.value)


def test_self_referencing_alias_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="alias"):
        load_config(_write(tmp_path, "prices: &p {x: *p}\n"))


def test_a_few_aliases_are_fine(tmp_path):
    text = (
        "defaults: &d {conn_id: aws_default, bucket: b, prefix: p}\n"
        "sources:\n  aws:\n    - {<<: *d, name: one}\n    - {<<: *d, name: two}\n"
    )
    with pytest.raises(ConfigError, match="defaults"):  # an unknown section, but parsed
        load_config(_write(tmp_path, text))
    cfg = load_config(_write(tmp_path, text.replace("defaults:", "prices:")))
    assert [s.bucket for s in cfg.sources.aws] == ["b", "b"]


def test_oversized_file_is_refused_before_parsing(tmp_path):
    p = _write(tmp_path, "prices:\n" + "  k: v\n" * (MAX_CONFIG_BYTES // 6))
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert time.monotonic() - t0 < 2
    assert str(p) in str(e.value) and "larger than" in str(e.value)


@pytest.mark.parametrize(
    "text", ["[" * 200_000 + "]" * 200_000, "- " * 100_000 + "x\n", "a: " * 50_000 + "b\n"]
)
def test_deep_nesting_is_refused_not_a_crash(tmp_path, text):
    """The C parser recursed itself into a segfault on 400k nested brackets."""
    with pytest.raises(ConfigError) as e:
        load_config(_write(tmp_path, text))
    assert "nested" in str(e.value) or "not valid YAML" in str(e.value)


def test_not_utf8_is_named(tmp_path):
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(_write(tmp_path, b"prices: {x: \xff\xfe}\n"))


def test_python_tags_do_not_execute(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "prices: !!python/object/apply:os.system ['true']\n"))


_YAMLISH = st.lists(
    st.one_of(
        hostile_text(4),
        st.sampled_from(
            [
                "&a ",
                "*a",
                "<<: ",
                ": ",
                "- ",
                "\n",
                "  ",
                "{",
                "}",
                "[",
                "]",
                "!!str ",
                "!!binary ",
                "? ",
                "|\n",
                "'",
                '"',
                "%YAML 1.1\n",
                "---\n",
                "...\n",
                "prices:",
                "sources:",
                "aws:",
                "name: x",
                "#",
            ]
        ),
    ),
    max_size=40,
).map("".join)


@given(text=_YAMLISH)
def test_property_any_text_is_a_config_or_a_config_error(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("cfg") / "finops.yaml"
    p.write_text(text, encoding="utf-8")
    t0 = time.monotonic()
    try:
        load_config(p)
    except ConfigError as e:
        assert str(e).startswith(str(p))
    assert time.monotonic() - t0 < 5
