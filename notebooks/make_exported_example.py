"""Regenerate notebooks/exported_example.ipynb: a real ``%export`` of a scripted session.

The session runs through the real Open Interpreter kernel (started by jupyter_client),
with the scripted OpenAI-compatible server from tests/llm_server.py playing the model,
in this directory so the instructions can read data/sales.csv. One step fails and is
fixed, to show that the export keeps only what worked. Run from the repository root:

    python notebooks/make_exported_example.py [OUTPUT]

then check the result with ``oi-kernel verify notebooks/exported_example.ipynb``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests import llm_server as S  # noqa: E402
from tests.kernel_client import KernelSession  # noqa: E402

LOAD = """\
import csv

with open("data/sales.csv", newline="") as f:
    rows = list(csv.DictReader(f))
print(len(rows), "rows; columns:", ", ".join(rows[0]))"""

TOTALS_WRONG = """\
totals = {}
for row in rows:
    totals[row["region"]] += float(row["revenue"])"""

TOTALS = """\
from collections import defaultdict

totals = defaultdict(float)
for row in rows:
    totals[row["region"]] += float(row["revenue"])
for region, total in sorted(totals.items(), key=lambda item: -item[1]):
    print(f"{region:<6} {total:>10,.2f}")"""

BEST_MONTH = """\
by_month = defaultdict(float)
for row in rows:
    by_month[row["month"]] += float(row["revenue"])
best = max(by_month, key=by_month.get)
print("best month:", best, f"({by_month[best]:,.2f})")"""

SCRIPT = [
    (
        "Load data/sales.csv and tell me how many rows and which columns it has.",
        [
            S.tool_call(LOAD),
            S.text("The file has 72 rows: month, region, product, units, revenue."),
        ],
    ),
    (
        "Total revenue per region, largest first.",
        [
            S.tool_call(TOTALS_WRONG),
            S.tool_call(TOTALS),
            S.text("North sells the most, then South, then West."),
        ],
    ),
    (
        "Which month had the highest total revenue?",
        [S.tool_call(BEST_MONTH), S.text("December 2024 was the best month.")],
    ),
]


def main(output: Path) -> int:
    with S.ScriptedLLMServer() as server, tempfile.TemporaryDirectory() as logs:
        env = {
            "OI_MODEL": "openai/scripted",
            "OI_API_BASE": server.url,
            "OI_API_KEY": "sk-scripted-example-0000",
            "OI_LOG_DIR": logs,
            "OI_AUTO_RUN": "1",
        }
        with KernelSession(env=env, cwd=str(HERE)) as kernel:
            for instruction, replies in SCRIPT:
                server.enqueue(*replies)
                result = kernel.execute(instruction, timeout=120)
                if result.status != "ok":
                    print(result.text, file=sys.stderr)
                    return 1
            result = kernel.execute(f"%export {output} --force")
            print(result.text)
            return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE / "exported_example.ipynb"
    sys.exit(main(target))
