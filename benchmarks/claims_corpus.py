"""Writes benchmarks/claims_corpus.jsonl: (answer, outputs) pairs from realistic analyses,
for ``benchmarks/claims.py``.

Each scenario makes data with numpy (seeded), prints what a step would print (pandas
``describe``/``groupby``/``value_counts`` tables, model metrics, file sizes, ``%timeit``
lines, money, shares, dates) and writes the answer a model would give, with its numbers
formatted the ways answers write them (rounded, with separators, as percentages, in MB,
with a currency, with a decimal comma). In every third pair one number of the answer is
planted wrong: digits transposed, rounded the wrong way, a percentage worked out in the
head, a unit slipped, a number from another session, or one made up; a planted number is
checked to appear in no output at the precision the answer shows.

    python benchmarks/claims_corpus.py        # (needs pandas) rewrite the corpus
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "claims_corpus.jsonl"
PAIRS_PER_SCENARIO = 12
ERRORS = ("transposed", "wrong-rounding", "head-math", "unit-slip", "other-session", "invented")

Scenario = Callable[[Any], tuple[str, list[str], str, dict[str, tuple[float, str]]]]


def _describe(rng: Any) -> tuple[str, list[str], str, dict]:
    import pandas as pd

    n = int(rng.integers(800, 25_000))
    df = pd.DataFrame({"price": rng.gamma(4.0, 10.5, n).round(2),
                       "qty": rng.integers(1, 9, n)})
    d = df.describe()
    out = d.to_string()
    v = {"n": (n, ",.0f"), "mean": (d.loc["mean", "price"], ".2f"),
         "median": (d.loc["50%", "price"], ".1f"), "lo": (d.loc["min", "price"], ".2f"),
         "hi": (d.loc["max", "price"], ".2f"), "std": (d.loc["std", "price"], ".1f")}
    answer = ("The {n} orders have a mean price of {mean} EUR (median {median}), ranging from "
              "{lo} to {hi}; the standard deviation is {std}.")
    return "describe the prices in orders.csv", [out], answer, v


def _groupby(rng: Any) -> tuple[str, list[str], str, dict]:
    import pandas as pd

    regions = ["North", "South", "East", "West"]
    df = pd.DataFrame({"region": rng.choice(regions, 4000),
                       "revenue": rng.gamma(2.0, 180.0, 4000)})
    g = df.groupby("region")["revenue"].sum().sort_values(ascending=False)
    share = (g / g.sum()).round(4)
    out = [g.round(2).to_string(), share.to_string()]
    v = {"top": (g.iloc[0], ",.0f"), "share": (share.iloc[0] * 100, ".1f"),
         "second": (g.iloc[1], ",.0f"), "last_share": (share.iloc[-1] * 100, ".0f")}
    answer = (f"{g.index[0]} leads with €{{top}}, {{share}}% of revenue; {g.index[1]} follows "
              f"with €{{second}}, and {g.index[-1]} brings in only {{last_share}}%.")
    return "revenue by region, with shares", out, answer, v


def _metrics(rng: Any) -> tuple[str, list[str], str, dict]:
    acc, prec, rec = rng.uniform(0.71, 0.97), rng.uniform(0.6, 0.95), rng.uniform(0.55, 0.95)
    f1 = 2 * prec * rec / (prec + rec)
    auc = min(0.999, acc + rng.uniform(0.01, 0.05))
    out = (f"accuracy: {acc:.4f}\nprecision: {prec:.4f}\nrecall: {rec:.4f}\n"
           f"f1: {f1:.4f}\nroc_auc: {auc:.4f}")
    v = {"acc": (acc * 100, ".1f"), "f1": (f1, ".3f"), "auc": (auc, ".2f"),
         "prec": (prec, ".2f"), "rec": (rec * 100, ".0f")}
    answer = ("The model reaches {acc}% accuracy with an F1 of {f1} and a ROC AUC of {auc}; "
              "precision is {prec} and recall {rec}%.")
    return "evaluate the classifier on the test set", [out], answer, v


def _confusion(rng: Any) -> tuple[str, list[str], str, dict]:
    tn, fp, fn, tp = (int(x) for x in rng.integers(20, 2500, 4))
    n = tn + fp + fn + tp
    out = f"[[{tn:5d} {fp:5d}]\n [{fn:5d} {tp:5d}]]\ntest rows: {n}"
    v = {"tp": (tp, "d"), "fp": (fp, "d"), "n": (n, ",d"), "fn": (fn, "d")}
    answer = "On {n} test rows it finds {tp} true positives, with {fp} false positives and {fn} misses."
    return "show the confusion matrix", [out], answer, v


def _file_sizes(rng: Any) -> tuple[str, list[str], str, dict]:
    csv = int(rng.integers(300_000_000, 4_000_000_000))
    parquet = int(csv * rng.uniform(0.08, 0.4))
    saved = 1 - parquet / csv
    out = f"orders.csv {csv}\norders.parquet {parquet}\nsaved: {saved:.4f}"
    v = {"pq": (parquet / 1e6, ".1f"), "csv": (csv / 1e9, ".2f"), "saved": (saved * 100, ".0f")}
    answer = "orders.parquet is {pq} MB, {saved}% smaller than the {csv} GB CSV."
    return "convert orders.csv to parquet and compare sizes", [out], answer, v


def _timings(rng: Any) -> tuple[str, list[str], str, dict]:
    fast_ms, slow_s = rng.uniform(2, 60), rng.uniform(0.5, 9)
    dev = fast_ms * rng.uniform(0.02, 0.1) * 1000
    out = [f"{fast_ms:.1f} ms ± {dev:.0f} µs per loop (mean ± std. dev. of 7 runs, 100 loops each)",
           f"loop: {slow_s:.3f} s\nspeed-up: {slow_s * 1000 / fast_ms:.1f}"]
    v = {"fast": (fast_ms, ".1f"), "slow": (slow_s, ".2f"),
         "speed": (slow_s * 1000 / fast_ms, ".0f")}
    answer = ("The vectorised version takes {fast} ms against {slow} s for the loop: about "
              "{speed} times faster.")
    return "time the loop against the vectorised version", out, answer, v


def _money(rng: Any) -> tuple[str, list[str], str, dict]:
    amounts = rng.gamma(1.5, 220.0, int(rng.integers(40, 900))).round(2)
    total, avg, top = amounts.sum(), amounts.mean(), amounts.max()
    out = f"invoices: {len(amounts)}\ntotal: {total:.2f}\naverage: {avg:.2f}\nlargest: {top:.2f}"
    v = {"total": (total, ",.2f"), "avg": (avg, ",.2f"), "top": (top, ",.0f"),
         "count": (len(amounts), "d")}
    answer = "The {count} invoices total ${total}; the average is ${avg} and the largest about ${top}."
    return "sum up the invoices for March", [out], answer, v


def _shares(rng: Any) -> tuple[str, list[str], str, dict]:
    import pandas as pd

    s = pd.Series(rng.choice(["churned", "active", "paused"], 3000, p=rng.dirichlet([3, 6, 1])))
    vc = s.value_counts(normalize=True)
    out = vc.to_string()
    v = {a: (vc[a] * 100, ".0f") for a in ("churned", "active", "paused")}
    v["churned1"] = (vc["churned"] * 100, ".1f")
    answer = ("{churned}% of customers churned ({churned1}% exactly), {active}% are active "
              "and {paused}% paused their plan.")
    return "what share of customers churned?", [out], answer, v


def _dates(rng: Any) -> tuple[str, list[str], str, dict]:
    import pandas as pd

    days = pd.to_datetime("2023-01-01") + pd.to_timedelta(rng.integers(0, 365, 3456), "D")
    by_month = pd.Series(days).dt.month.value_counts().sort_index()
    best = int(by_month.idxmax())
    out = [f"first: {days.min().date()}\nlast: {days.max().date()}\norders: {len(days)}",
           by_month.to_string()]
    month = pd.Timestamp(2023, best, 1).strftime("%B")
    v = {"orders": (len(days), ",d"), "best": (int(by_month.max()), "d")}
    answer = (f"Between {days.min().date()} and {days.max().date()} there were {{orders}} "
              f"orders; {month} 2023 had the most ({{best}}).")
    return "orders over 2023, by month", out, answer, v


def _correlation(rng: Any) -> tuple[str, list[str], str, dict]:
    import pandas as pd

    price = rng.normal(20, 4, 500)
    demand = -rng.uniform(0.3, 2.0) * price + rng.normal(0, 6, 500)
    ads = rng.normal(5, 1, 500) + 0.2 * demand
    c = pd.DataFrame({"price": price, "demand": demand, "ads": ads}).corr()
    out = c.round(3).to_string()
    v = {"pd": (c.loc["price", "demand"], ".2f"), "ad": (c.loc["ads", "demand"], ".2f")}
    answer = "Price and demand correlate at {pd}; ads and demand at {ad}."
    return "how do price, demand and ads correlate?", [out], answer, v


def _missing(rng: Any) -> tuple[str, list[str], str, dict]:
    n = int(rng.integers(1000, 60_000))
    miss = {c: int(rng.integers(0, n // 10)) for c in ("age", "income", "city")}
    out = "\n".join(f"{c:<8}{k}" for c, k in miss.items()) + f"\nrows: {n}\n" + "\n".join(
        f"{c}_share {k / n:.4f}" for c, k in miss.items())
    v = {"age": (miss["age"], ",d"), "age_p": (miss["age"] / n * 100, ".1f"), "n": (n, ",d"),
         "income": (miss["income"], "d")}
    answer = "age has {age} missing values ({age_p}% of {n} rows) and income {income}."
    return "count the missing values", [out], answer, v


def _merge(rng: Any) -> tuple[str, list[str], str, dict]:
    n = int(rng.integers(5000, 200_000))
    matched = int(n * rng.uniform(0.6, 0.99))
    out = f"left rows: {n:,}\nmatched: {matched:,}\nmatch rate: {matched / n:.4f}"
    v = {"matched": (matched, ",d"), "n": (n, ",d"), "rate": (matched / n * 100, ".1f"),
         "unmatched": (n - matched, ",d")}
    answer = "After the merge {matched} of {n} rows matched ({rate}%)."
    return "merge customers with orders", [out], answer, v


def _european(rng: Any) -> tuple[str, list[str], str, dict]:
    mean, total = rng.uniform(10, 90), rng.uniform(10_000, 9_000_000)
    out = f"Mittelwert: {mean:.4f}\nSumme: {total:.2f}"
    v = {"mean": (mean, ".2f"), "total": (total, ",.2f")}
    answer = "Der Mittelwert liegt bei {mean} €, die Summe bei {total} €."
    return "Mittelwert und Summe der Umsätze", [out], answer, v


def _memory(rng: Any) -> tuple[str, list[str], str, dict]:
    deep = int(rng.integers(2_000_000, 900_000_000))
    rows = int(rng.integers(10_000, 5_000_000))
    out = f"<class 'pandas.DataFrame'>\nRangeIndex: {rows} entries, 0 to {rows - 1}\n" \
          f"memory usage: {deep / 2**20:.1f} MB\ndeep bytes: {deep}"
    v = {"mb": (deep / 2**20, ".1f"), "rows": (rows, ",d"), "gb": (deep / 1e9, ".2f")}
    answer = "The frame holds {rows} rows and uses {mb} MB ({gb} GB on disk estimate)."
    return "how much memory does the frame use?", [out], answer, v


SCENARIOS: dict[str, Scenario] = {
    "describe": _describe, "groupby": _groupby, "metrics": _metrics, "confusion": _confusion,
    "file-sizes": _file_sizes, "timings": _timings, "money": _money, "shares": _shares,
    "dates": _dates, "correlation": _correlation, "missing": _missing, "merge": _merge,
    "european": _european, "memory": _memory,
}


def _fmt(value: float, spec: str, european: bool) -> str:
    text = format(int(round(value)) if spec.endswith("d") else value, spec)
    if european:
        text = text.replace(",", "\x00").replace(".", ",").replace("\x00", ".")
    return text


def _printed(outputs: list[str]) -> list[float]:
    import re

    found = re.findall(r"-?\d[\d,]*\.?\d*(?:e[-+]?\d+)?", "\n".join(outputs))
    return [float(x.replace(",", "")) for x in found if x.replace(",", "").strip(".")]


def _traceable(value: float, spec: str, printed: list[float]) -> bool:
    """Whether ``value`` shown with ``spec`` equals some printed number at that precision
    (as itself, a share, or in a unit of a thousand/million/billion/2^20)."""
    decimals = int(spec.rsplit(".", 1)[1][:-1]) if "." in spec else 0
    half = 0.5 * 10 ** -decimals + 1e-9
    shown = round(value, decimals)
    for p in printed:
        for f in (1, 100, 1e-3, 1e-6, 1e-9, 2**-20, 1e3):
            if abs(abs(p) * f - abs(shown)) <= half:
                return True
    return False


def _plant(rng: Any, error: str, value: float, spec: str) -> float:
    text = format(int(round(abs(value))) if spec.endswith("d") else abs(value),
                  spec.replace(",", ""))
    if error == "transposed":  # two neighbouring digits of the shown number swapped
        digits = [i for i, ch in enumerate(text) if ch.isdigit()]
        pairs = [(a, b) for a, b in zip(digits, digits[1:], strict=False)
                 if b == a + 1 and text[a] != text[b]]
        if pairs:
            a, b = pairs[int(rng.integers(0, len(pairs)))]
            return math.copysign(float(text[:a] + text[b] + text[a] + text[b + 1:]), value)
        return value * 1.13
    if error == "wrong-rounding":
        decimals = int(spec.rsplit(".", 1)[1][:-1]) if "." in spec else 0
        step = 10 ** -decimals
        return math.copysign((math.floor(abs(value) / step) - 1) * step, value)
    if error == "head-math":
        return value * rng.choice([0.9, 1.1, 1.25, 0.8])
    if error == "unit-slip":
        return value * rng.choice([1000, 0.001, 1.024])
    if error == "other-session":
        return value * rng.uniform(1.3, 2.5)
    return float(rng.uniform(1, 10 ** len(str(int(abs(value)) or 1))))


def build(seed: int = 43) -> list[dict[str, Any]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    pairs = []
    for name, make in SCENARIOS.items():
        for k in range(PAIRS_PER_SCENARIO):
            instruction, outputs, template, values = make(rng)
            outputs = outputs if isinstance(outputs, list) else [outputs]
            european = name == "european"
            shown = {key: _fmt(v, spec, european) for key, (v, spec) in values.items()}
            planted = []
            if len(pairs) % 3 == 2:
                error = ERRORS[len(pairs) // 3 % len(ERRORS)]
                printed = _printed(outputs)
                used = sorted({f for _, f, _, _ in string.Formatter().parse(template) if f})
                for key in rng.permutation(used):
                    v, spec = values[key]
                    wrong = _plant(rng, error, float(v), spec)
                    text = _fmt(wrong, spec, european)
                    if text != shown[key] and not _traceable(wrong, spec, printed):
                        shown[key] = text
                        planted.append({"slot": str(key), "text": text, "error": error})
                        break
            answer = string.Formatter().vformat(template, (), shown)
            pairs.append({"id": f"{name}-{k + 1}", "scenario": name, "instruction": instruction,
                          "outputs": outputs, "answer": answer, "planted": planted})
    return pairs


def main() -> None:
    pairs = build()
    with open(CORPUS, "w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair, ensure_ascii=False) + "\n")
    planted = sum(bool(p["planted"]) for p in pairs)
    print(f"wrote {len(pairs)} pairs ({planted} with a planted wrong number) to {CORPUS}")


if __name__ == "__main__":
    main()
