"""How often the hidden-character review (``safety.risk.character_flags``) flags real code,
and how fast it reads: every ``.py`` file under a directory (default: this environment's
site-packages, i.e. pandas, numpy, matplotlib, IPython, Jupyter ...), one file as one block.

    python benchmarks/hidden_characters.py [DIR]

A file is much larger than a proposed block, so the share of flagged files is an upper bound
for ordinary code; each flag found is a real hidden character (locale tables, Unicode tests).
"""

from __future__ import annotations

import collections
import sys
import sysconfig
import time
from pathlib import Path

from oi_kernel.safety.risk.characters import character_flags


def main(root: Path) -> None:
    files = sorted(root.rglob("*.py"))
    counts: collections.Counter[str] = collections.Counter()
    high = read = chars = 0
    started = time.perf_counter()
    for path in files:
        try:
            code = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        read += 1
        chars += len(code)
        flags = character_flags(code, "python")
        counts.update({f.category for f in flags})
        high += any(f.severity == "high" for f in flags)
    seconds = time.perf_counter() - started
    print(f"{read:,} files, {chars / 1e6:.1f} M characters under {root}")
    print(f"read in {seconds:.1f} s ({chars / seconds / 1e6:.2f} M characters/s)")
    print(f"files with a high flag: {high} ({100 * high / max(read, 1):.2f}%)")
    for category, n in counts.most_common():
        print(f"  {category}: {n} files ({100 * n / max(read, 1):.2f}%)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sysconfig.get_paths()["purelib"]))
