"""Check the relative links of README.md, CONTRIBUTING.md and docs/, offline.

Every Markdown link or image that is not a URL (``http(s)://``, ``mailto:``) must name a file
or directory of the repository, and its ``#anchor`` a heading of that Markdown file (GitHub's
and the site's heading ids: lower case, punctuation dropped, spaces as ``-``) or a MyST label
(``(name)=``). Nothing is fetched: external links are not checked (``sphinx-build -b
linkcheck`` would need the internet). ``sphinx-build -W -n`` checks the links between pages
once more, as the site resolves them.

    python docs/_ext/check_links.py          # exits 1 and lists the broken links
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^(```|~~~)")
_SKIP_DIRS = {"_build", "_generated"}


def files() -> list[Path]:
    """The Markdown files whose links are checked."""
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    found += sorted(p for p in (ROOT / "docs").rglob("*.md")
                    if not _SKIP_DIRS & set(p.relative_to(ROOT / "docs").parts))
    return [p for p in found if p.exists()]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code removed."""
    lines, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        marker = _FENCE.match(line.lstrip())
        if marker:
            if not fence:
                fence = marker.group(1)
            elif line.lstrip().startswith(fence):
                fence = ""
            continue
        if not fence:
            lines.append((number, re.sub(r"`[^`]*`", "``", line)))
    return lines


def slug(heading: str) -> str:
    """A heading's id as GitHub and MyST (``myst_heading_anchors``) make it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The ids a link may name in a Markdown file: its headings and MyST labels."""
    found = set()
    fence = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        marker = _FENCE.match(line.lstrip())
        if marker:
            fence = "" if fence and line.lstrip().startswith(fence) else (fence or marker.group(1))
            continue
        if fence:
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            found.add(slug(heading.group(1)))
        label = re.match(r"^\(([\w.:-]+)\)=\s*$", line)
        if label:
            found.add(label.group(1).lower())
    return frozenset(found)


def problems(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """One line per broken link of ``paths`` (default: ``files()``): ``file:line: target:
    why``, paths relative to ``root``."""
    out = []
    for path in files() if paths is None else paths:
        for number, line in prose_lines(path.read_text(encoding="utf-8")):
            for match in _LINK.finditer(line):
                target = match.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                where = f"{path.relative_to(root)}:{number}: {target}"
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                if not dest.exists():
                    out.append(f"{where}: no such file")
                elif anchor and dest.suffix == ".md" and anchor.lower() not in anchors(dest):
                    out.append(f"{where}: no heading #{anchor} in {dest.relative_to(root)}")
    return out


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    checked = len(files())
    print(f"{checked} files checked, {len(found)} broken relative links", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
