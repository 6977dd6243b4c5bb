"""Numbers as written: in an answer's prose, and in the text a step printed. Pure: stdlib only.

``prose_numbers`` finds the figures an answer states, with what they mean: ``41.3 EUR``,
``1,200`` / ``1 200`` / ``1.200,5``, ``23%``, ``$4.5M``, ``-0.8``, ``1.2e-5``, ``3.2 GB``,
``15 ms``. Each ``Written`` number carries the value(s) it can mean, the precision it shows
(its half step: ``41.3`` stands for anything in [41.25, 41.35]) and the scale factors that
relate it to a raw output value (``23%`` is ``0.23`` as a share; ``3.2 GB`` is
``3_200_000_000`` bytes; ``15 ms`` is ``0.015`` s). What is not a claim is left out or
flagged: list markers, step numbers, dates and times, version strings, numbers glued to
words (``x2``, ``COVID-19``, ``3rd``), code blocks.

``output_numbers`` reads every number in a step's text output (tables included), as values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|"
           r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
# spans whose digits are never claims: fenced code, dates, clock times, versions, ids
_SKIP = re.compile(
    r"```.*?(?:```|\Z)"  # fenced code
    r"|~~~.*?(?:~~~|\Z)"
    r"|\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{4}-(?:0[1-9]|1[0-2])\b"
    r"|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b(?!\.\d)"
    rf"|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}(?:,?\s+\d{{4}})?\b"
    rf"|\b{_MONTHS},?\s+\d{{4}}\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[ap]\.?m\.?\b)?"
    r"|\bv?(?!\d{1,3}(?:\.\d{3})+(?:,\d+)?\b)\d+\.\d+\.\d+(?:\.\d+)*\b"  # versions, IPs
    r"|\b(?:[Ss]teps?|[Cc]ells?|In\s*\[|[Ii]nstructions?|[Qq]uestions?)\s*\[?\d+\]?"
    r"(?:\s*(?:[-–,]|and|or|to)\s*\d+)*"
    r"|\[\^?\d+\]"  # footnote markers
    r"|(?m:^[ \t>]*(?:#+[ \t]*)?\d{1,3}[.)](?=\s))"  # list markers, numbered headings
    , re.S)
_INLINE_CODE = re.compile(r"`([^`\n]*)`")

_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "US$": "USD"}
_CODES = r"USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR|SEK|NOK|DKK|PLN|BRL|euros?|dollars?"
_SUFFIX = {"k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "mn": 1e6,
           "million": 1e6, "millions": 1e6, "bn": 1e9, "B": 1e9, "billion": 1e9,
           "billions": 1e9, "trillion": 1e12, "tn": 1e12}
# unit -> the factors from the written unit to a raw value an output may print
_UNITS: dict[str, tuple[float, ...]] = {
    "bytes": (1,), "byte": (1,), "b": (1,),
    "kb": (1, 1e3, 1024), "kib": (1, 1024), "mb": (1, 1e6, 2**20), "mib": (1, 2**20),
    "gb": (1, 1e9, 2**30), "gib": (1, 2**30), "tb": (1, 1e12, 2**40), "tib": (1, 2**40),
    # time: the written unit in seconds, ms, µs, ns, minutes (what a step may print)
    "ns": (1, 1e-9, 1e-6, 1e-3), "µs": (1, 1e-6, 1e-3, 1e3), "μs": (1, 1e-6, 1e-3, 1e3),
    "us": (1, 1e-6, 1e-3, 1e3), "ms": (1, 1e-3, 1e3, 1e6),
    "s": (1, 1e3, 1e6, 1 / 60), "sec": (1, 1e3, 1e6, 1 / 60), "secs": (1, 1e3, 1e6, 1 / 60),
    "seconds": (1, 1e3, 1e6, 1 / 60), "second": (1, 1e3, 1e6, 1 / 60),
    "min": (1, 60, 6e4), "mins": (1, 60, 6e4), "minutes": (1, 60, 6e4), "minute": (1, 60, 6e4),
    "h": (1, 3600, 60), "hours": (1, 3600, 60), "hour": (1, 3600, 60),
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUM = (r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,200 / 1,200.5
        r"|\d{1,3}(?:\.\d{3})+,\d+"  # 1.200,5
        r"|\d{1,3}(?:\.\d{3}){2,}(?![.\d])"  # 1.234.568
        r"|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?:[.,]\d+)?"  # 1 200 / 1 200,5
        r"|\d+(?:[.,]\d+)?|\.\d+)"
        r"(?:[eE][-+]?\d+)?")
_PROSE = re.compile(
    r"(?P<cur>US\$|[$€£¥₹])?\s?"
    r"(?P<sign>[-−–]|\+)?"
    r"(?P<cur2>US\$|[$€£¥₹])?"
    rf"(?P<num>{_NUM})"
    r"(?P<after>"
    r"\s?(?P<pct>%|percent\b|per cent\b|pp\b|percentage points?\b)"
    rf"|\s?(?P<suf>thousand|millions?|billions?|trillion|mn|bn|tn|[kKMB])\b"
    rf"(?:\s?(?P<code_s>{_CODES})\b)?"
    rf"|\s?(?P<code>{_CODES})\b"
    rf"|\s?(?P<unit>(?i:{_UNIT_RE}))\b"
    r")?")
_OUT = re.compile(r"(?<![\w.])[-−]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
                  r"(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Written:
    """One number as the answer wrote it."""

    text: str  # as written, with its sign, currency, percent, unit
    start: int
    end: int
    values: tuple[float, ...]  # what it can mean (``1.200`` is 1.2 or 1200)
    half: float  # half its last shown digit, in the written unit (41.3 -> 0.05)
    factors: tuple[float, ...] = (1.0,)  # written unit -> raw output values
    kind: str = "number"  # integer, decimal, percent, currency, unit, scientific, separated
    signed: bool = False  # written with a sign
    year_like: bool = False  # a bare 1900-2100: a year unless an output has it


def _parse(num: str) -> tuple[tuple[float, ...], int]:
    """The values ``num`` can mean and how many decimals it shows (for the last value)."""
    mantissa, _, exp = num.partition("e") if "e" in num else num.partition("E")
    scale = 10 ** int(exp) if exp else 1
    m = mantissa.replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    options: list[tuple[float, int]] = []
    if "," in m and "." in m:
        if m.rfind(",") > m.rfind("."):  # 1.200,5
            whole, _, frac = m.replace(".", "").partition(",")
        else:  # 1,200.5
            whole, _, frac = m.replace(",", "").partition(".")
        options.append((float(f"{whole}.{frac or 0}"), len(frac)))
    elif " " in m:
        sep = "," if "," in m else "."
        whole, _, frac = m.replace(" ", "").partition(sep)
        options.append((float(f"{whole}.{frac or 0}"), len(frac)))
    elif "," in m:
        groups = m.split(",")
        if len(groups) > 2 or (len(groups[-1]) == 3 and groups[0] not in ("0", "")):
            options.append((float(m.replace(",", "")), 0))
        if not options:  # 41,3 or 0,125 (a decimal comma)
            options.append((float(m.replace(",", ".")), len(groups[1])))
    elif m.count(".") > 1:  # 1.200.000
        options.append((float(m.replace(".", "")), 0))
    else:
        frac = m.partition(".")[2]
        options.append((float(m), len(frac)))
        if len(frac) == 3 and m[0] != "0":  # 1.200 as thousands (German)
            options.append((float(m.replace(".", "")), 0))
    values = tuple(v * scale for v, _ in options)
    return values, options[0][1]


def _glued(text: str, start: int, end: int) -> bool:
    """A number that is part of a word or a name (x2, 3rd, COVID-19, col_2, 2x, 4K)."""
    before = text[start - 1] if start else " "
    if before.isalnum() or before in "_@#/\\" or (
            before in "-." and start > 1 and text[start - 2].isalnum()):
        return True
    after = text[end] if end < len(text) else " "
    return after.isalpha() or after == "_" or (after in "./" and end + 1 < len(text)
                                                and text[end + 1].isalnum())


def _blank(text: str) -> str:
    """``text`` with what is never a claim replaced by spaces (offsets kept); an inline code
    span keeps its number only when it is nothing else (`` `41.27` ``)."""
    chars = list(text)
    for m in _SKIP.finditer(text):
        chars[m.start():m.end()] = " " * (m.end() - m.start())
    blanked = "".join(chars)
    for m in _INLINE_CODE.finditer(blanked):
        inner = m.group(1).strip()
        if not _PROSE.fullmatch(inner):
            chars[m.start():m.end()] = " " * (m.end() - m.start())
        else:
            chars[m.start()] = chars[m.end() - 1] = " "
    return "".join(chars)


def prose_numbers(text: str) -> list[Written]:
    """The numbers an answer states, in order (see the module's docstring)."""
    clean = _blank(text)
    found: list[Written] = []
    for m in _PROSE.finditer(clean):
        start, end = m.start("num"), m.end("num")
        if _glued(clean, start, m.end("after") if m.group("unit") or m.group("suf") else end):
            continue
        written = _written(m, text)
        if written is not None:
            found.append(written)
    return found


def _written(m: re.Match[str], text: str) -> Written | None:
    num = m.group("num")
    try:
        values, decimals = _parse(num)
    except ValueError:
        return None
    sign = m.group("sign") or ""
    lead = m.start("sign") if sign else m.start("num")
    if sign in "–" and sign and lead > 0 and text[lead - 1].isdigit():
        sign, lead = "", m.start("num")  # a range 10–20
    negative = sign in ("-", "−", "–") and bool(sign)
    if negative and lead > 0 and (text[lead - 1].isalnum() or text[lead - 1] in ")]"):
        negative, lead = False, m.start("num")  # 2-3, x-1: a hyphen, not a sign
    cur = m.group("cur") or m.group("cur2") or ""
    start = m.start("cur") if m.group("cur") else lead
    end = m.end("after") if m.group("after") else m.end("num")
    exp = "e" in num.lower()
    step = 10.0 ** -decimals
    if exp:
        step *= 10.0 ** int(re.split("[eE]", num)[1])
    factors, kind = (1.0,), "integer" if decimals == 0 else "decimal"
    if m.group("pct"):
        kind, factors = "percent", (1.0, 0.01)
    elif m.group("suf"):
        mult = _SUFFIX[m.group("suf")]
        factors, kind = (mult, 1.0), "currency" if cur or m.group("code_s") else "scaled"
    elif m.group("unit"):
        factors, kind = tuple(float(f) for f in _UNITS[m.group("unit").lower()]), "unit"
    if cur or m.group("code") or m.group("code_s"):
        kind = "currency"
    if exp and kind in ("integer", "decimal"):
        kind = "scientific"
    if kind in ("integer", "decimal") and (re.search(r"[ ,\u00a0\u202f]", num)
                                          or num.count(".") > 1):
        kind = "separated"
    values = tuple(-v if negative else v for v in values)
    year_like = (kind == "integer" and not negative and not cur and len(num) == 4
                 and 1900 <= values[0] <= 2100)
    return Written(text[start:end].strip(), start, end, values, step / 2, factors, kind,
                   bool(sign), year_like)


def output_numbers(text: str) -> list[tuple[float, str]]:
    """Every number in an output's text, as (value, as printed): ``1,200`` is 1200, and
    ``41.270000`` 41.27; a table's cells each count."""
    out: list[tuple[float, str]] = []
    for m in _OUT.finditer(text):
        raw = m.group()
        try:
            out.append((float(raw.replace(",", "").replace("−", "-")), raw))
        except ValueError:
            continue
    return out


def numbers_in(text: str) -> set[float]:
    """The values of the numbers in ``text`` (the user's instruction), every reading."""
    return {v for w in prose_numbers(text) for v in w.values} | {
        v for v, _ in output_numbers(text)}
