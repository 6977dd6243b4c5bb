"""What you see is what runs: hidden characters made visible, and found.

A browser reorders text around bidi controls (Trojan Source, CVE-2021-42574), a terminal
obeys escape sequences, and zero-width or tag characters show as nothing, so code can look
different from what Python, the shell or an MCP server reads. Wherever a block (or a tool's
JSON arguments) is shown for a decision or a record, ``visible(text)`` replaces each such
character by a plain marker naming its code point (``⟦U+202E RLO⟧``) and marks a line too
long to see whole; ``hidden_findings(code, language)`` says where they are ("line 3: U+202E
RIGHT-TO-LEFT OVERRIDE in a string"), and also finds identifiers that mix scripts
(``pаth`` with a Cyrillic ``а``) or that Python reads as another name (``ｐrint``).
The code that runs is never changed here: this module only describes it. Pure: stdlib only.
"""

from __future__ import annotations

import bisect
import io
import json
import re
import tokenize
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

LONG_LINE = 500  # a longer line is marked: a card or a terminal cannot show it whole
OPEN, CLOSE = "⟦", "⟧"

# Short names people know (the Unicode name is used for the rest).
_SHORT = {
    0x00: "NUL", 0x01: "SOH", 0x02: "STX", 0x03: "ETX", 0x04: "EOT", 0x05: "ENQ", 0x06: "ACK",
    0x07: "BEL", 0x08: "BS", 0x0B: "VT", 0x0C: "FF", 0x0D: "CR", 0x0E: "SO", 0x0F: "SI",
    0x10: "DLE", 0x11: "DC1", 0x12: "DC2", 0x13: "DC3", 0x14: "DC4", 0x15: "NAK", 0x16: "SYN",
    0x17: "ETB", 0x18: "CAN", 0x19: "EM", 0x1A: "SUB", 0x1B: "ESC", 0x1C: "FS", 0x1D: "GS",
    0x1E: "RS", 0x1F: "US", 0x7F: "DEL", 0x85: "NEL", 0x9B: "CSI", 0x9D: "OSC", 0x9C: "ST",
    0x00A0: "NBSP", 0x00AD: "SHY", 0x034F: "CGJ", 0x061C: "ALM", 0x180E: "MVS",
    0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM",
    0x2028: "LSEP", 0x2029: "PSEP", 0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF",
    0x202D: "LRO", 0x202E: "RLO", 0x202F: "NNBSP", 0x2060: "WJ", 0x2066: "LRI", 0x2067: "RLI",
    0x2068: "FSI", 0x2069: "PDI", 0x3000: "IDEOGRAPHIC SPACE", 0xFEFF: "BOM",
}
# Names of controls, which have none in the Unicode database.
_CONTROL_NAMES = {
    0x00: "NULL", 0x07: "BELL", 0x08: "BACKSPACE", 0x0B: "LINE TABULATION",
    0x0C: "FORM FEED", 0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE",
    0x85: "NEXT LINE", 0x9B: "CONTROL SEQUENCE INTRODUCER", 0x9D: "OPERATING SYSTEM COMMAND",
}
_UNNAMED = {"Cc": "CONTROL", "Co": "PRIVATE USE", "Cs": "SURROGATE"}
_BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
# Letters and marks that draw nothing (category Lo / Mn, so not caught by category).
_BLANK = frozenset([0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5, 0x2800,
                    *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])


def kind(ch: str) -> str | None:
    """Why ``ch`` is hidden ("bidi", "control", "invisible", "whitespace"), or None."""
    cp = ord(ch)
    if ch in "\t\n" or (0x20 <= cp < 0x7F):
        return None
    if cp in _BIDI:
        return "bidi"
    category = unicodedata.category(ch)
    if category in ("Cc", "Cs", "Zl", "Zp"):  # (U+2028 ends a line in JavaScript, not Python)
        return "control"
    if category in ("Cf", "Co") or cp in _BLANK:  # (private use: drawn by some fonts only)
        return "invisible"
    if category == "Zs":
        return "whitespace"
    return None


def describe(ch: str) -> str:
    """"U+202E RIGHT-TO-LEFT OVERRIDE", "U+001B ESCAPE (ESC)"."""
    cp = ord(ch)
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(cp, "")
    short = _SHORT.get(cp)
    if not name:
        name = short or _UNNAMED.get(unicodedata.category(ch), "CHARACTER")
    elif short and short != name:
        name += f" ({short})"
    return f"U+{cp:04X} {name}"


def marker(ch: str) -> str:
    """The plain visible text shown in place of a hidden character: ``⟦U+202E RLO⟧``."""
    cp = ord(ch)
    if 0xE0020 <= cp <= 0xE007E:  # a tag character: "ASCII smuggling"; show the letter
        return f"{OPEN}U+{cp:04X} TAG {chr(cp - 0xE0000)}{CLOSE}"
    short = (_SHORT.get(cp) or unicodedata.name(ch, "")
             or _UNNAMED.get(unicodedata.category(ch), "CHARACTER"))
    return f"{OPEN}U+{cp:04X} {short}{CLOSE}"


def _emoji_part(line: str, col: int) -> bool:
    """Whether the character at ``col`` is the usual glue of an emoji: a variation selector
    after a symbol ("⚠️"), a zero-width joiner between symbols ("👩‍💻")."""
    cp = ord(line[col])
    before = line[col - 1] if col else ""
    if cp in (0xFE0E, 0xFE0F):  # (one, after a symbol: "⚠️", "‼️", "ℹ️", "1️⃣")
        return bool(before) and (unicodedata.category(before)[0] in "SP"
                                 or before in "ℹ#*0123456789")
    if cp == 0x200D and before and col + 1 < len(line):
        after = line[col + 1]
        return (unicodedata.category(before) in ("So", "Sk") or ord(before) == 0xFE0F) \
            and unicodedata.category(after) == "So"
    return False


_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")  # what may be hidden: a first, fast look


def hidden_in(line: str) -> Iterator[tuple[int, str]]:
    """(column, kind) of each hidden character of one line."""
    for match in _CANDIDATE.finditer(line):
        col = match.start()
        why = kind(line[col])
        if why and not _emoji_part(line, col):
            yield col, why


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character ``visible`` would mark (tab and newline aside)."""
    if not _CANDIDATE.search(text):
        return False
    return any(True for line in text.split("\n") for _ in hidden_in(line))


def needs_marking(text: str) -> bool:
    """Whether ``visible(text)`` differs from ``text``: hidden characters or a long line."""
    return has_hidden(text) or any(len(ln) > LONG_LINE for ln in text.split("\n"))


def visible(text: str, long_line: int = LONG_LINE) -> str:
    """``text`` for a person: each hidden character replaced by its marker, each line longer
    than ``long_line`` characters preceded by a note with its length. Tab and newline stay,
    so no raw control character reaches a terminal and a browser has nothing to reorder."""
    if not _CANDIDATE.search(text) and len(text) <= long_line:
        return text
    lines = []
    for line in text.split("\n"):
        cols = dict(hidden_in(line)) if _CANDIDATE.search(line) else {}
        shown = "".join(marker(ch) if i in cols else ch for i, ch in enumerate(line)) \
            if cols else line
        if len(line) > long_line:
            shown = f"{OPEN}long line: {len(line):,} characters{CLOSE} " + shown
        lines.append(shown)
    return "\n".join(lines)


def first_line(text: str, limit: int = 80) -> str:
    """The first line of ``text`` for a listing: made visible, cut at ``limit`` characters,
    and how many lines follow."""
    lines = text.strip("\n").split("\n")
    first = visible(lines[0], len(lines[0]) + 1)  # (no long-line note: it is cut here)
    first = first if len(first) <= limit else first[: limit - 1] + "…"
    return first + (f" (+{len(lines) - 1} lines)" if len(lines) > 1 else "")


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based
    category: str  # "hidden-characters" | "mixed-script" | "odd-whitespace" | "long-line"
    text: str  # "U+202E RIGHT-TO-LEFT OVERRIDE in a string"

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


_CATEGORY = {"bidi": "hidden-characters", "control": "hidden-characters",
             "invisible": "hidden-characters", "whitespace": "odd-whitespace"}
_WORD = re.compile(r"[^\W\d][\w]*")


def hidden_findings(code: str, language: str = "") -> list[Finding]:
    """Where ``code`` hides something: hidden characters (one finding per line and character),
    mixed-script or look-alike identifiers, lines too long to see whole. For JSON, the strings
    it decodes to are read too (``"\\u202e"`` reaches the server as the character)."""
    if not _CANDIDATE.search(code):  # plain ASCII: only a line can be too long (or JSON hide)
        long = [Finding(n, "long-line", f"{len(line):,} characters, too long to see whole")
                for n, line in enumerate(code.split("\n"), 1) if len(line) > LONG_LINE]
        return long + (_json_findings(code, set()) if language == "json" else [])
    python = language in ("python", "ipython", "")
    spans, names = _python_tokens(code) if python else ([], None)
    found: dict[tuple[int, str, str], Finding] = {}
    for number, line in enumerate(code.split("\n"), 1):
        for col, why in hidden_in(line):
            ch = line[col]
            where = _place(spans, (number, col))
            text = describe(ch) + (f" {where}" if where else "")
            found.setdefault((number, _CATEGORY[why], describe(ch)),
                             Finding(number, _CATEGORY[why], text))
        if len(line) > LONG_LINE:
            found[(number, "long-line", "")] = Finding(
                number, "long-line", f"{len(line):,} characters, too long to see whole")
    findings = list(found.values())
    findings += _identifier_findings(code, names, python)
    if language == "json":
        findings += _json_findings(code, {(f.line, f.text.split(" ")[0]) for f in findings})
    return sorted(findings, key=lambda f: f.line)


_Pos = tuple[int, int]  # (1-based line, column)
_Span = tuple[_Pos, _Pos, str]  # a string or comment: start, end, "in a string"/"in a comment"


def _python_tokens(code: str) -> tuple[list[_Span], list[tuple[int, str]] | None]:
    """Python's strings and comments (in order) and its non-ASCII names; names None when the
    code does not tokenize to the end (then words are read instead)."""
    spans: list[_Span] = []
    names: list[tuple[int, str]] | None = []
    fstring_middle = getattr(tokenize, "FSTRING_MIDDLE", -1)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.STRING or tok.type == fstring_middle:
                spans.append((tok.start, tok.end, "in a string"))
            elif tok.type == tokenize.COMMENT:
                spans.append((tok.start, tok.end, "in a comment"))
            elif tok.type == tokenize.NAME and not tok.string.isascii():
                names.append((tok.start[0], tok.string))  # type: ignore[union-attr]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        names = None
    return spans, names


def _place(spans: list[_Span], pos: _Pos) -> str:
    """Where ``pos`` is: "in a string", "in a comment" or "" (code, or not Python)."""
    i = bisect.bisect_right(spans, (pos, (1 << 62, 0), "")) - 1
    if i >= 0 and spans[i][0] <= pos < spans[i][1]:
        return spans[i][2]
    return ""


def _identifier_findings(code: str, names: list[tuple[int, str]] | None, python: bool
                         ) -> list[Finding]:
    """Look-alike names: Python's non-ASCII names from its tokens; elsewhere (or Python that
    does not tokenize) every non-ASCII word."""
    if names is None:
        names = [(number, match.group()) for number, line in enumerate(code.split("\n"), 1)
                 if not line.isascii() for match in _WORD.finditer(line)
                 if not match.group().isascii()]
    found: dict[tuple[int, str], Finding] = {}
    for number, word in names:
        problem = identifier_problem(word, python=python)
        if problem:
            found.setdefault((number, word), Finding(number, "mixed-script", problem))
    return list(found.values())


def script(ch: str) -> str:
    """The script of a letter, from its Unicode name ("LATIN", "CYRILLIC", "GREEK", ...);
    "" for what is not a letter. Han and kana count as one (Japanese mixes them)."""
    if not ch.isalpha():
        return ""
    name = unicodedata.name(ch, "")
    first = name.split(" ")[0].split("-")[0] if name else "?"
    if first in ("CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH", "IDEOGRAPHIC"):
        return "HAN"
    return first


# Scripts that mix in ordinary writing (Japanese, Chinese, Korean with Latin: UTS #39's
# "highly restrictive" level); any other mix is flagged.
_MIXABLE = frozenset({"LATIN", "HAN", "HANGUL", "BOPOMOFO"})
# Cyrillic and Greek letters that look like Latin ones (a whole word of them reads as Latin).
_LOOKALIKE = set("аеорсухіјѕһԁԛԝӏАВЕКМНОРСТХІЈЅԜ" "οαιντυχκρΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")


def identifier_problem(word: str, python: bool = True) -> str:
    """Why an identifier may not be what it looks like, or "": letters of more than one
    script, a word made only of Latin look-alikes, or (Python) a name that NFKC turns into
    another one (``ｐrint`` is ``print``)."""
    scripts = sorted({s for s in map(script, word) if s})
    shown = visible(word)
    if python and unicodedata.normalize("NFKC", word) != word:
        read = unicodedata.normalize("NFKC", word)
        return f"the identifier '{shown}' is read by Python as '{read}'"
    if len(scripts) > 1 and set(scripts) - _MIXABLE:
        mixed = ", ".join(s.title() for s in scripts)
        return f"the identifier '{shown}' mixes scripts ({mixed}): {_spelled(word)}"
    if scripts and scripts[0] != "LATIN" and all(ch in _LOOKALIKE or not ch.isalpha()
                                                  for ch in word):
        return (f"the identifier '{shown}' is written in {scripts[0].title()} letters that look "
                f"Latin: {_spelled(word)}")
    return ""


def _spelled(word: str) -> str:
    """The non-ASCII letters of ``word`` with their names."""
    seen = dict.fromkeys(ch for ch in word if not ch.isascii())
    return ", ".join(f"'{ch}' {describe(ch)}" for ch in seen)


def _json_findings(code: str, known: set[tuple[int, str]]) -> list[Finding]:
    """Hidden characters in the strings a JSON text decodes to (written as ``\\uXXXX``)."""
    try:
        value = json.loads(code)
    except (ValueError, RecursionError):
        return []
    found: dict[str, Finding] = {}
    for text in _strings(value):
        for ch in text:
            why = kind(ch)
            if why and ch != "\r" and not any(k[1] == f"U+{ord(ch):04X}" for k in known):
                found.setdefault(describe(ch), Finding(
                    1, _CATEGORY[why], f"{describe(ch)} in a JSON string (written as an escape)"))
    return list(found.values())


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
