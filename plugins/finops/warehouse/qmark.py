"""qmark (`?`) SQL -> psycopg (`%s`) SQL, so every backend takes the same placeholder style.

A naive `sql.replace("?", "%s")` would corrupt `?` inside string literals, quoted identifiers,
comments and dollar-quoted bodies, and psycopg reads every `%` as the start of a placeholder.
So the SQL is tokenised: literals / identifiers / comments are copied verbatim (with `%`
doubled, psycopg un-doubles it), a bare `?` becomes `%s`, a bare `%` becomes `%%`.
The jsonb `?` operator therefore cannot be written in parameterised SQL: use
`jsonb_exists(col, ?)` instead (a bare `?` is always a placeholder).
"""

from __future__ import annotations

import re

from finops.warehouse.base import WarehouseError

# Order matters: quoted things and comments first, then the two characters we rewrite.
_TOKEN = re.compile(
    r"""
      (?P<estr>(?<![A-Za-z0-9_])[eE]'(?:[^'\\]|\\.|'')*')   # E'..' : backslash escapes
    | (?P<str>'(?:[^']|'')*')                               # '..'  : standard_conforming_strings
    | (?P<ident>"(?:[^"]|"")*")                             # "quoted identifier"
    | (?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z0-9_]*|)\$.*?\$(?P=tag)\$)  # $tag$ .. $tag$
    | (?P<line>--[^\n]*)                                    # -- comment
    | (?P<block>/\*.*?\*/)                                  # /* comment */
    | (?P<open>['"]|/\*|\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)    # an opener that never closed
    | (?P<q>\?)
    | (?P<pct>%)
    """,
    re.VERBOSE | re.DOTALL,
)


def to_pyformat(sql: str) -> tuple[str, int]:
    """Return (psycopg SQL, number of placeholders)."""
    out: list[str] = []
    pos = 0
    count = 0
    for m in _TOKEN.finditer(sql):
        out.append(sql[pos : m.start()])
        pos = m.end()
        kind = "dollar" if m.group("dollar") is not None else m.lastgroup
        if kind == "q":
            out.append("%s")
            count += 1
        elif kind == "pct":
            out.append("%%")
        elif kind == "open":
            # `$1` style positional params are not dollar quotes: only `$tag$` / `$$` reach here.
            raise WarehouseError(
                f"unterminated quote or comment in SQL near: {sql[m.start() : m.start() + 40]!r}"
            )
        else:
            out.append(m.group(0).replace("%", "%%"))
    out.append(sql[pos:])
    return "".join(out), count


def translate(sql: str, params_len: int) -> str:
    """Translate and check that the SQL has exactly one placeholder per parameter."""
    text, n = to_pyformat(sql)
    if n != params_len:
        raise WarehouseError(f"SQL has {n} `?` placeholder(s) but {params_len} parameter(s) were given")
    return text
