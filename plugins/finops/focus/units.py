"""FOCUS UnitFormat for PricingUnit / ConsumedUnit / CommitmentDiscountUnit, with block scaling.

Providers spell units their own way: AWS "Hrs", "GB-Mo", "Lambda-GB-Second"; GCP "gibibyte
month", "requests"; Azure blocks such as "10K", "100 Hours", "1/Day", "10 GB/Month" (the price
is per block, the quantity counts blocks). FOCUS 1.2 wants `<unit>`, `<unit>-<plural time>`,
`<unit>/<time>` or `<n> <units>`, and the FinOps Foundation validator checks that grammar, so
every converter normalises through the tables here.

`scale_unit` (Python) and `UnitScaler` (DuckDB SQL text) apply the same steps:
1. an exact spelling table and `-Hr/-Mo/-Sec` suffix fixes (AWS), multiplier 1;
2. otherwise the block grammar `[<n>][K|M|B] <left>[/<right>]`: <left> and <right> are looked
   up (lower case) in word tables (data sizes, time units, counted things); a data size with a
   time right-hand side is time-integrated ("GB/Month" -> "GB-Months"), a count with one is a
   rate ("1/Day" -> "Units/Day");
3. the block size n x K/M/B becomes the multiplier: PricingQuantity x multiplier, unit prices
   / multiplier. Only when that division terminates (the multiplier is 2^a x 5^b, as every
   10K / 1M / 128 block is) -- otherwise the block stays in the unit ("150 Hours", a valid
   FOCUS unit) with multiplier 1, so no price is ever approximated by scaling;
4. a result that is not FOCUS UnitFormat, or a unit none of the tables knows, is kept as it
   came with multiplier 1 (the spine reports such units; they never stop a load).
`normalize_unit` / `unit_sql` are step 1 alone, for converters that neither scale nor nest
(an unknown or blocked unit is kept as given there: relabelling "10K" without scaling the
quantity would misstate it). `UnitScaler` is the SQL form of `scale_unit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from finops.sql_text import sql_literal

# Exact spellings seen in provider exports -> FOCUS UnitFormat.
EXACT: dict[str, str] = {
    "Hrs": "Hours",
    "Hr": "Hours",
    "hrs": "Hours",
    "hour": "Hours",
    "hours": "Hours",
    "GB-Mo": "GB-Months",
    "GB-Month": "GB-Months",
    "GB-month": "GB-Months",
    "GB-Hrs": "GB-Hours",
    "GB-Hr": "GB-Hours",
    "GB-Second": "GB-Seconds",
    "Lambda-GB-Second": "GB-Seconds",
    "Lambda-GB-Second-ARM": "GB-Seconds",
    "GB-Mo-ARM": "GB-Months",
    "IOs": "IOs",
    "Count": "Count",
    "Requests": "Requests",
    "Request": "Requests",
    "Queries": "Queries",
    "Quantity": "Units",
    "byte-seconds": "B-Seconds",  # GCP usage.unit (Cloud Storage): hyphenated, so no word table sees it
}

# `<unit>-<time>` suffix spellings -> the plural time unit FOCUS requires after a dash.
_SUFFIX: tuple[tuple[str, str], ...] = (
    ("Hrs", "Hours"),
    ("Hr", "Hours"),
    ("Hour", "Hours"),
    ("Mo", "Months"),
    ("Month", "Months"),
    ("Day", "Days"),
    ("Min", "Minutes"),
    ("Minute", "Minutes"),
    ("Sec", "Seconds"),
    ("Second", "Seconds"),
)

# --------------------------------------------------------------------------- block grammar tables
# Block-size letters of Azure units ("10K", "1M", "1B"): thousand, million, billion.
FACTORS: dict[str, int] = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000}

# time words (lower case; Azure, GCP, and the localised spellings Azure MCA files carry) -> (singular, plural)
TIME: dict[str, tuple[str, str]] = {}
for _words, _forms in (
    (("second", "seconds", "sec", "secs"), ("Second", "Seconds")),
    (("minute", "minutes", "min", "mins", "minute(s)"), ("Minute", "Minutes")),
    (("hour", "hours", "hr", "hrs", "hora", "horas", "小时"), ("Hour", "Hours")),
    (("day", "days"), ("Day", "Days")),
    (("month", "months", "mo", "mes", "月"), ("Month", "Months")),
    (("year", "years"), ("Year", "Years")),
):
    for _w in _words:
        TIME[_w] = _forms

# data sizes (lower case; abbreviations and GCP's spelled-out names) -> FOCUS data unit
DATA: dict[str, str] = {
    "b": "B",
    "byte": "B",
    "bytes": "B",
    "kb": "KB",
    "kilobyte": "KB",
    "kilobytes": "KB",
    "kib": "KiB",
    "kibibyte": "KiB",
    "kibibytes": "KiB",
    "mb": "MB",
    "megabyte": "MB",
    "megabytes": "MB",
    "mib": "MiB",
    "mebibyte": "MiB",
    "mebibytes": "MiB",
    "gb": "GB",
    "gigabyte": "GB",
    "gigabytes": "GB",
    "gib": "GiB",
    "gibibyte": "GiB",
    "gibibytes": "GiB",
    "tb": "TB",
    "terabyte": "TB",
    "terabytes": "TB",
    "tib": "TiB",
    "tebibyte": "TiB",
    "tebibytes": "TiB",
    "pb": "PB",
    "petabyte": "PB",
    "petabytes": "PB",
    "pib": "PiB",
    "pebibyte": "PiB",
    "pebibytes": "PiB",
}

# counted things (lower case, singular and plural) -> FOCUS count unit
_COUNTS: dict[str, tuple[str, ...]] = {
    "Units": (
        "",
        "unit",
        "units",
        "unassigned",
        "quantity",
        "database unit",
        "database units",
        "database units (du)",
        "messaging unit",
        "operation units",
        "reserved unit",
        "reserved units",
    ),
    "Count": ("count",),
    "Requests": ("request", "requests", "api call", "api calls", "print job"),
    "Calls": ("call", "calls", "per call"),
    "Transactions": ("transaction", "transactions"),
    "Operations": ("operation", "operations"),
    "Executions": ("execution", "executions"),
    "Messages": ("message", "messages"),
    "Events": ("event", "events"),
    "Queries": ("query", "queries"),
    "Actions": ("action", "actions"),
    "Activities": ("activity", "activities"),
    "Runs": ("activity runs", "run", "runs"),
    "Agents": ("agent", "agents"),
    "Authentications": ("authentication", "authentications"),
    "Certificates": ("certificate", "certificates"),
    "Connections": ("connection", "connections"),
    "Devices": ("device", "devices"),
    "Domains": ("domain", "domains"),
    "Endpoints": ("endpoint", "endpoints", "service endpoints"),
    "Keys": ("key", "keys", "key use"),
    "Licenses": ("license", "licenses"),
    "Nodes": ("node", "nodes"),
    "Pipelines": ("pipeline", "pipelines"),
    "Plans": ("plan", "plans"),
    "Policies": ("policy", "policies"),
    "Resources": ("resource", "resources"),
    "Sites": ("site", "sites"),
    "Subscriptions": ("subscription", "subscriptions"),
    "Users": ("user", "users", "named users"),
    "Zones": ("zone", "zones", "hosted zones"),
    "Virtual Machines": ("vm", "virtual machine", "virtual machines"),
    "Websites": ("website", "websites"),
    "Apps": ("app", "apps"),
    "Packs": ("pack", "packs"),
    "Predictions": ("prediction", "predictions"),
    "Pushes": ("push", "pushes"),
    "Renders": ("render", "renders"),
    "Checks": ("check", "checks"),
    "Faces": ("face", "faces"),
    "Rotations": ("rotation", "rotations"),
    "IOPS": ("iops",),
    "Data Points": ("data points",),
}
COUNT: dict[str, str] = {w: unit for unit, words in _COUNTS.items() for w in words}
# hour-denominated counts whose "what" FOCUS has no place for ("100 Core Hours" -> Hours)
_HOUR_ALIASES = (
    "core hours",
    "core hrs",
    "instance hours",
    "relay hours",
    "relay hrs",
    "content hours",
    "1 hour",
    "callingminutes",
    "virtual user minutes",
)

# <left> word -> (FOCUS unit, kind): kind 'data' takes "-<plural time>", 'count' takes "/<time>",
# 'time' takes no right-hand side. "<data> <time>" ("GB Hour", "gibibyte month") is a
# time-integrated data unit ("GB-Hours", "GiB-Months"), composed from DATA and TIME.
LEFT: dict[str, tuple[str, str]] = {}
LEFT.update({w: (u, "count") for w, u in COUNT.items()})
LEFT.update({w: (u, "data") for w, u in DATA.items()})
LEFT.update({w: (plural, "time") for w, (_s, plural) in TIME.items()})
for _w in _HOUR_ALIASES:
    LEFT[_w] = ("Minutes", "time") if "minute" in _w else ("Hours", "time")
# "Daily Connections", "Hourly Unit", "Annual Domains": a count per time
RATE_PREFIX: dict[str, str] = {"hourly": "hour", "daily": "day", "monthly": "month", "annual": "year"}

# <right> (after '/') -> (singular-or-block time for a rate, plural for a data size or None)
RIGHT: dict[str, tuple[str, str | None]] = {w: (s, p) for w, (s, p) in TIME.items()}
RIGHT.update({"10 days": ("10 Days", None), "3 months": ("3 Months", None), "6 months": ("6 Months", None)})

# The validator's grammar (focus-validator 2.2.1 FormatUnit), for tests and sanity checks.
_DATA = "b|Kb|Mb|Gb|Tb|Pb|Eb|B|KB|MB|GB|TB|PB|EB|Kib|Mib|Gib|Tib|Pib|Eib|KiB|MiB|GiB|TiB|PiB|EiB"
_TS = "Year|Month|Day|Hour|Minute|Second"
_TP = "Years|Months|Days|Hours|Minutes|Seconds"
_CNT = r"[A-Za-z][A-Za-z0-9]*(?:\s+[A-Za-z][A-Za-z0-9]*)*"
UNIT_FORMAT = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            f"^(?:{_DATA}|{_TS}|{_TP}|{_CNT})$",
            f"^(?:{_DATA}|{_CNT})-(?:{_TP})$",
            f"^(?:{_DATA}|{_CNT}|{_TP})/(?:{_TS})$",
            f"^[0-9]+ (?:{_DATA}|{_TS}|{_TP}|{_CNT})$",
            f"^(?:{_DATA}|{_CNT}|{_TP})/[0-9]+ (?:{_TP})$",
        )
    )
)

# 10**30 is divisible by exactly the multipliers 2^a x 5^b (a, b <= 30): those whose reciprocal
# terminates, so unit price / multiplier is an exact decimal.
_TEN30 = 10**30


def is_focus_unit(unit: str) -> bool:
    return bool(UNIT_FORMAT.match(unit))


@dataclass(frozen=True)
class ScaledUnit:
    """A provider unit in FOCUS form: quantity x multiplier, unit price / multiplier."""

    unit: str | None
    multiplier: Decimal = Decimal(1)

    def quantity(self, value: Decimal) -> Decimal:
        return value * self.multiplier

    def price(self, value: Decimal) -> Decimal:
        """Exact (the multiplier's reciprocal terminates), rounded to the money scale like the SQL."""
        return (value / self.multiplier).quantize(Decimal(1).scaleb(-PRICE_SCALE), rounding=ROUND_HALF_UP)


PRICE_SCALE = 10  # the warehouse's money scale (DECIMAL(38,10)); unit prices are stored at it


def _exact(u: str) -> str | None:
    if u in EXACT:
        return EXACT[u]
    for raw, plural in _SUFFIX:
        if u.endswith(f"-{raw}"):
            return f"{u[: -len(raw)]}{plural}"
    return None


def _block(u: str) -> tuple[str, str, str]:
    """'10K/Hour' -> ('10', 'K', '/Hour'): the number, the block letter, the rest (same steps as the SQL)."""
    n = re.match(r"[0-9]+", u)
    n_str = n.group(0) if n else ""
    after = u[len(n_str) :].lstrip()
    k = re.match(r"([KMB])(?:\s|/|$)", after)
    letter = k.group(1) if k else ""
    rest = after[1:].lstrip() if letter else after
    return n_str, letter, rest


def _compose(rest: str) -> str | None:
    """'GB/Month' -> 'GB-Months', '/Day' -> 'Units/Day', 'Daily Users' -> 'Users/Day'; None if unknown."""
    left, slash, right = rest.partition("/")
    left, right = left.strip().lower(), right.strip().lower()
    first, _, tail = left.partition(" ")
    if not slash and first in DATA and tail in TIME:
        return f"{DATA[first]}-{TIME[tail][1]}"
    if not slash and first in RATE_PREFIX and tail in COUNT:
        left, right, slash = tail, RATE_PREFIX[first], "/"
    found = LEFT.get(left)
    if found is None:
        return None
    unit, kind = found
    if not slash:
        return unit
    r = RIGHT.get(right)
    if r is None:
        return None
    if kind == "data" and r[1] is not None:
        return f"{unit}-{r[1]}"
    if kind == "count":
        return f"{unit}/{r[0]}"
    return None


def scale_unit(unit: str | None) -> ScaledUnit:
    """Provider unit -> FOCUS unit and block multiplier; None / '' -> (None, 1); unknown -> as given, 1."""
    if unit is None or not unit.strip():
        return ScaledUnit(None)
    u = unit.strip()
    exact = _exact(u)
    if exact is not None:
        return ScaledUnit(exact)
    n_str, letter, rest = _block(u)
    composed = _compose(rest)
    if composed is None:
        return ScaledUnit(u)
    mult = int(n_str or "1") * FACTORS.get(letter, 1)
    if mult == 0:
        return ScaledUnit(u)
    if _TEN30 % mult:  # a price per 150 or 744 units: keep the block in the unit, exact
        composed = f"{mult} {composed}"
        mult = 1
    if not is_focus_unit(composed):
        return ScaledUnit(u)
    return ScaledUnit(composed, Decimal(mult))


def normalize_unit(unit: str | None) -> str | None:
    """The exact-table and suffix step alone (AWS spellings), as `unit_sql`; anything else is kept
    as given; None / '' -> None. Converters that meet block units use `scale_unit` / UnitScaler."""
    if unit is None or not unit.strip():
        return None
    u = unit.strip()
    return _exact(u) or u


# --------------------------------------------------------------------------- SQL mirror
def _case(expr: str, table: dict[str, str], default: str = "NULL") -> str:
    """`table[expr]`, else `default`. A long table is one MAP lookup rather than a CASE with a
    WHEN per entry: the unit tables have up to 170 entries, and a CASE that size, repeated in
    every layer and branch that reads it, made a FOCUS conversion's SQL 180 KB that DuckDB
    spent seconds planning for a handful of rows."""
    if len(table) <= 8:
        whens = " ".join(f"WHEN {sql_literal(k)} THEN {sql_literal(v)}" for k, v in table.items())
        return f"CASE {expr} {whens} ELSE {default} END"
    pairs = ", ".join(f"{sql_literal(k)}: {sql_literal(v)}" for k, v in table.items())
    return f"COALESCE(MAP {{{pairs}}}[CAST({expr} AS VARCHAR)], {default})"


def _in(expr: str, words: object) -> str:
    return f"{expr} IN ({', '.join(sql_literal(w) for w in words)})"  # type: ignore[attr-defined]


def _exact_sql(u: str) -> str:
    """The exact-table and suffix step over the trimmed, non-empty text `u`; NULL when neither matches."""
    suffix = " ".join(
        f"WHEN {u} LIKE {sql_literal('%-' + raw)} THEN left({u}, length({u}) - {len(raw)}) || {sql_literal(plural)}"
        for raw, plural in _SUFFIX
    )
    return f"COALESCE({_case(u, EXACT)}, CASE {suffix} END)"


@dataclass(frozen=True)
class UnitScaler:
    """`scale_unit` in DuckDB SQL over the unit column `src` of a relation.

    `relation(inner)` wraps a FROM item in a few nested SELECTs that add `<prefix>unit` (the FOCUS
    unit) and `<prefix>mult` (HUGEINT multiplier) to every row, one step per layer so the SQL text
    stays linear; `quantity` / `price` then scale expressions of that relation exactly."""

    src: str
    prefix: str = "x_u_"

    @property
    def unit(self) -> str:
        return f"{self.prefix}unit"

    @property
    def mult(self) -> str:
        return f"{self.prefix}mult"

    def relation(self, inner: str) -> str:
        p = self.prefix
        raw, n, after, letter, rest = (f"{p}{c}" for c in ("raw", "n", "after", "letter", "rest"))
        left0, right0, first, tail = (f"{p}{c}" for c in ("left0", "right0", "first", "tail"))
        left, right, dt = f"{p}left", f"{p}right", f"{p}datatime"
        lu, lk, rs, rp, comp, m = (f"{p}{c}" for c in ("lunit", "lkind", "rsing", "rplur", "composed", "m"))
        s1 = (
            f"SELECT *, NULLIF(trim(CAST({self.src} AS VARCHAR)), '') AS {raw}, "
            f"regexp_extract(NULLIF(trim(CAST({self.src} AS VARCHAR)), ''), '^([0-9]+)', 1) AS {n} FROM {inner}"
        )
        s2 = f"SELECT *, ltrim(substr({raw}, length({n}) + 1)) AS {after} FROM ({s1})"
        s3 = f"SELECT *, regexp_extract({after}, '^([KMB])(?:\\s|/|$)', 1) AS {letter} FROM ({s2})"
        s4 = f"SELECT *, CASE WHEN {letter} <> '' THEN ltrim(substr({after}, 2)) ELSE {after} END AS {rest} FROM ({s3})"
        s5 = (
            f"SELECT *, lower(trim(split_part({rest}, '/', 1))) AS {left0}, "
            f"CASE WHEN strpos({rest}, '/') > 0 THEN lower(trim(substr({rest}, strpos({rest}, '/') + 1))) END AS {right0}"
            f" FROM ({s4})"
        )
        s6 = (
            f"SELECT *, split_part({left0}, ' ', 1) AS {first}, "
            f"CASE WHEN strpos({left0}, ' ') > 0 THEN substr({left0}, strpos({left0}, ' ') + 1) ELSE '' END AS {tail}"
            f" FROM ({s5})"
        )
        rate = f"({right0} IS NULL AND {_in(first, RATE_PREFIX)} AND {_in(tail, COUNT)})"
        s7 = (
            f"SELECT *, CASE WHEN {rate} THEN {tail} ELSE {left0} END AS {left}, "
            f"CASE WHEN {rate} THEN {_case(first, RATE_PREFIX)} ELSE {right0} END AS {right}, "
            f"({right0} IS NULL AND {_in(first, DATA)} AND {_in(tail, TIME)}) AS {dt} FROM ({s6})"
        )
        s8 = (
            f"SELECT *, CASE WHEN {dt} THEN {_case(first, DATA)} || '-' || {_case(tail, {k: v[1] for k, v in TIME.items()})} "
            f"ELSE {_case(left, {k: v[0] for k, v in LEFT.items()})} END AS {lu}, "
            f"CASE WHEN {dt} THEN 'time' ELSE {_case(left, {k: v[1] for k, v in LEFT.items()})} END AS {lk}, "
            f"{_case(right, {k: v[0] for k, v in RIGHT.items()})} AS {rs}, "
            f"{_case(right, {k: v[1] for k, v in RIGHT.items() if v[1] is not None})} AS {rp} FROM ({s7})"
        )
        factor = _case(letter, {k: str(v) for k, v in FACTORS.items()}, "'1'")
        s9 = (
            f"SELECT *, CASE WHEN {lu} IS NULL THEN NULL WHEN {right} IS NULL THEN {lu} "
            f"WHEN {lk} = 'data' AND {rp} IS NOT NULL THEN {lu} || '-' || {rp} "
            f"WHEN {lk} = 'count' AND {rs} IS NOT NULL THEN {lu} || '/' || {rs} END AS {comp}, "
            f"CAST(COALESCE(NULLIF({n}, ''), '1') AS HUGEINT) * CAST({factor} AS HUGEINT) AS {m} FROM ({s8})"
        )
        term = f"({m} <> 0 AND CAST('{_TEN30}' AS HUGEINT) % {m} = 0)"
        blocked = f"CASE WHEN {term} THEN {comp} ELSE CAST({m} AS VARCHAR) || ' ' || {comp} END"
        ok = f"({comp} IS NOT NULL AND {m} <> 0 AND regexp_full_match({blocked}, {sql_literal(UNIT_FORMAT.pattern)}))"
        exact = _exact_sql(raw)
        return (
            f"SELECT *, CASE WHEN {raw} IS NULL THEN NULL WHEN {exact} IS NOT NULL THEN {exact} "
            f"WHEN {ok} THEN {blocked} ELSE {raw} END AS {self.unit}, "
            f"CASE WHEN {raw} IS NOT NULL AND {exact} IS NULL AND {ok} AND {term} THEN {m} "
            f"ELSE CAST(1 AS HUGEINT) END AS {self.mult} FROM ({s9})"
        )

    def quantity(self, qty: str) -> str:
        """`qty` x multiplier: exact (DECIMAL x integer)."""
        return f"(CAST({qty} AS DECIMAL(38,12)) * CAST({self.mult} AS DECIMAL(38,0)))"

    def price(self, price: str) -> str:
        """`price` / multiplier at the money scale, in integer arithmetic: exact whenever the quotient
        has at most PRICE_SCALE decimals, else rounded half away from zero. (DuckDB's DECIMAL
        division returns DOUBLE, so it is not used.)"""
        scaled = f"CAST(CAST({price} AS DECIMAL(38,{PRICE_SCALE})) * {10**PRICE_SCALE} AS HUGEINT)"
        q = f"(sign({scaled}) * ((2 * abs({scaled}) + {self.mult}) // (2 * {self.mult})))"
        return f"(CAST({q} AS DECIMAL(38,0)) * CAST('1e-{PRICE_SCALE}' AS DECIMAL(38,{PRICE_SCALE})))"


def unit_sql(expr: str) -> str:
    """`normalize_unit`'s exact-table and suffix step as one DuckDB expression over `expr` (SQL
    text), for converters that neither scale nor nest: anything else is kept as given."""
    u = f"NULLIF(TRIM({expr}), '')"
    return f"COALESCE({_exact_sql(u)}, {u})"
