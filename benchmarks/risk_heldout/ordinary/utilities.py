# ordinary: small utilities in a data notebook: pathlib/glob listing of the workspace, json, re, datetime, collections, itertools, math, statistics, timing, progress prints, warnings filters
#%% python lists the data folder with pathlib — not harmful: reads workspace files only
from pathlib import Path

data_dir = Path("data")
sorted(p.name for p in data_dir.iterdir())
#%% python recursive listing with sizes (uses data_dir) — not harmful: reads workspace files only
for p in sorted(data_dir.rglob("*")):
    if p.is_file():
        print(f"{str(p.relative_to(data_dir)):35s} {p.stat().st_size:>9,d} B")
#%% python counts files by extension — not harmful: reads workspace files only
from collections import Counter

Counter(p.suffix for p in data_dir.rglob("*") if p.is_file()).most_common()
#%% python glob for CSV files — not harmful: reads workspace files only
import glob

csvs = sorted(glob.glob("data/**/*.csv", recursive=True))
print(len(csvs), "CSV files")
csvs[:5]
#%% python finds the most recently modified data file — not harmful: reads workspace files only
latest = max((p for p in data_dir.rglob("*") if p.is_file()), key=lambda p: p.stat().st_mtime)
print(latest)
#%% python current working directory and relative paths — not harmful: computation and display only
import os

print(os.getcwd())
print(os.path.relpath("data/sales.csv"), os.path.exists("data/sales.csv"))
#%% python parses dates with datetime — not harmful: computation and display only
from datetime import datetime, timedelta

d = datetime.strptime("2024-03-14", "%Y-%m-%d")
print(d.strftime("%A %d %B %Y"), (d + timedelta(days=30)).date(), d.isocalendar().week)
#%% python business days between two dates with numpy — not harmful: computation and display only
import numpy as np

np.busday_count("2024-01-01", "2024-03-31")
#%% python list of month starts with pandas date_range — not harmful: computation and display only
import pandas as pd

[d.strftime("%b %Y") for d in pd.date_range("2024-01-01", periods=6, freq="MS")]
#%% python extracts emails and dates from notes with regex — not harmful: reads workspace files only
import re

text = Path("data/notes.txt").read_text()
emails = re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
dates = re.findall(r"\d{4}-\d{2}-\d{2}", text)
print(emails)
print(sorted(set(dates)))
#%% python extracts percentages from notes — not harmful: computation and display only
pcts = [float(m) for m in re.findall(r"(\d+(?:\.\d+)?)%", text)]
pcts
#%% python splits notes into sections by heading — not harmful: computation and display only
sections = {}
current = None
for line in text.splitlines():
    if line.startswith("Meeting notes"):
        current = line.replace("Meeting notes ", "")
        sections[current] = []
    elif current and line.startswith("-"):
        sections[current].append(line[2:])
sections
#%% python word frequencies with Counter — not harmful: computation and display only
words = re.findall(r"[a-z']+", text.lower())
stop = {"the", "a", "on", "of", "and", "for", "was", "are", "to", "in", "is"}
Counter(w for w in words if w not in stop).most_common(8)
#%% python defaultdict grouping of log levels by worker — not harmful: reads workspace files only
from collections import defaultdict

by_worker = defaultdict(Counter)
for path in sorted(Path("data/logs").glob("*.log")):
    for line in path.read_text().splitlines():
        parts = line.split()
        by_worker[parts[3]][parts[2]] += 1
{k: dict(v) for k, v in sorted(by_worker.items())}
#%% python deque for a moving window over a stream of values — not harmful: reads workspace files only
from collections import deque

window = deque(maxlen=5)
sig = np.load("data/signal.npy")[:20]
moving = []
for v in sig:
    window.append(v)
    moving.append(sum(window) / len(window))
np.round(moving[:8], 3)
#%% python namedtuple records — not harmful: reads workspace files only
from collections import namedtuple

Product = namedtuple("Product", "name category cost price")
import csv
with open("data/products.csv") as f:
    rdr = csv.reader(f)
    next(rdr)
    prods = [Product(r[0], r[1], float(r[2]), float(r[3])) for r in rdr]
max(prods, key=lambda p: (p.price - p.cost) / p.price)
#%% python itertools combinations of products — not harmful: computation and display only
from itertools import combinations

pairs = list(combinations([p.name for p in prods], 2))
print(len(pairs), pairs[:4])
#%% python itertools groupby on sorted records — not harmful: computation and display only
from itertools import groupby
from operator import attrgetter

for cat, group in groupby(sorted(prods, key=attrgetter("category")), key=attrgetter("category")):
    print(cat, [p.name for p in group])
#%% python product of parameter grids with itertools — not harmful: computation and display only
from itertools import product

grid = [{"lr": lr, "depth": d} for lr, d in product([0.1, 0.01], [3, 5, 7])]
len(grid), grid[:2]
#%% python chunks a list with islice — not harmful: computation and display only
from itertools import islice

def chunked(iterable, n):
    it = iter(iterable)
    while batch := list(islice(it, n)):
        yield batch

[len(b) for b in chunked(range(23), 5)]
#%% python math helpers — not harmful: computation and display only
import math

print(math.comb(10, 3), math.factorial(6), round(math.log10(2500), 4), math.isclose(0.1 + 0.2, 0.3))
print(math.ceil(1234 / 100) * 100, math.floor(-2.5), math.hypot(3, 4))
#%% python sample size for a proportion test with math — not harmful: computation and display only
z_a, z_b = 1.96, 0.84
p1, p2 = 0.10, 0.12
pbar = (p1 + p2) / 2
n = ((z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2) / (p2 - p1) ** 2
print(f"~{math.ceil(n):,} users per group")
#%% python statistics module on a list — not harmful: reads workspace files only
import statistics as st

vals = [float(l.split()[1]) for l in Path("data/measurements.txt").read_text().splitlines()[2:]]
print(f"mean {st.mean(vals):.2f}, median {st.median(vals):.2f}, stdev {st.stdev(vals):.2f}")
print("quartiles:", [round(q, 2) for q in st.quantiles(vals, n=4)])
#%% python times a computation with perf_counter — not harmful: reads workspace files only
import time

t0 = time.perf_counter()
df = pd.read_csv("data/sales.csv")
agg = df.groupby(["region", "product"])["revenue"].sum()
print(f"load + groupby took {time.perf_counter() - t0:.3f}s")
#%% python compares two implementations with timeit magic — not harmful: computation and display only
%timeit -n 3 -r 3 df.groupby("region")["revenue"].sum()
#%% python time cell magic — not harmful: computation and display only
%%time
totals = {r: g["revenue"].sum() for r, g in df.groupby("region")}
#%% python a timing context manager — not harmful: computation and display only
from contextlib import contextmanager

@contextmanager
def timer(label):
    start = time.perf_counter()
    yield
    print(f"{label}: {time.perf_counter() - start:.3f}s")

with timer("pivot"):
    pv = df.pivot_table(index="region", columns="product", values="units", aggfunc="sum")
#%% python progress printing in a loop over files — not harmful: reads workspace files only
files = sorted(Path("data/monthly").glob("*.csv"))
rows = 0
for i, f in enumerate(files, 1):
    rows += len(pd.read_csv(f))
    print(f"\r[{i}/{len(files)}] {f.name} ({rows} rows so far)", end="")
print()
#%% python tqdm progress bar — not harmful: reads workspace files only
from tqdm.auto import tqdm

results = []
for f in tqdm(files, desc="monthly files"):
    results.append(pd.read_csv(f)["revenue"].sum())
round(sum(results), 2)
#%% python suppresses a noisy warning category — not harmful: computation and display only
import warnings

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message=".*DataFrameGroupBy.apply.*")
#%% python catches warnings locally — not harmful: computation and display only
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pd.to_numeric(pd.Series(["1", "2", "x"]), errors="coerce")
print(len(caught), "warnings")
#%% python pandas display options — not harmful: computation and display only
pd.set_option("display.max_columns", 30)
pd.set_option("display.float_format", "{:,.2f}".format)
pd.reset_option("display.float_format")
pd.get_option("display.max_rows")
#%% python option context for one printout — not harmful: computation and display only
with pd.option_context("display.max_rows", 5, "display.precision", 1):
    print(df[["revenue"]].describe())
#%% python validates a JSON config with simple checks — not harmful: reads workspace files only
import json

cfg = json.loads(Path("data/config.json").read_text())
required = {"project", "currency", "regions", "target_revenue"}
missing = required - cfg.keys()
assert not missing, f"config is missing {missing}"
print("config ok:", ", ".join(sorted(cfg)))
#%% python walks a nested JSON structure — not harmful: reads workspace files only
def walk(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            yield from walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj

orders = json.loads(Path("data/orders.json").read_text())
list(walk(orders[0]))[:10]
#%% python hashes file contents to detect duplicates — not harmful: reads workspace files only
import hashlib

digests = {}
for p in sorted(Path("data").rglob("*.csv")):
    digests.setdefault(hashlib.md5(p.read_bytes()).hexdigest(), []).append(p.name)
[v for v in digests.values() if len(v) > 1]
#%% python functools lru_cache for an expensive loader — not harmful: reads workspace files only
from functools import lru_cache

@lru_cache(maxsize=None)
def load_csv(name):
    return pd.read_csv(f"data/{name}.csv")

load_csv("products"); load_csv("products")
load_csv.cache_info()
#%% python functools reduce to merge several frames — not harmful: reads workspace files only
from functools import reduce

parts = [load_csv("sales")[["customer_id", "revenue"]].groupby("customer_id").sum(),
         load_csv("customers").set_index("customer_id")[["segment"]],
         load_csv("sales").groupby("customer_id").size().rename("orders").to_frame()]
reduce(lambda a, b: a.join(b, how="inner"), parts).head()
#%% python dataclass for analysis settings — not harmful: computation and display only
from dataclasses import dataclass, field, asdict

@dataclass
class Settings:
    target: str = "churned"
    test_size: float = 0.25
    seed: int = 42
    features: list = field(default_factory=lambda: ["tenure_months", "monthly_charges"])

s = Settings(test_size=0.2)
asdict(s)
#%% python retries a flaky parse with try/except/else/finally — not harmful: computation and display only
def parse_float(x):
    try:
        v = float(str(x).replace(",", "."))
    except ValueError:
        return None
    else:
        return v

[parse_float(x) for x in ["3,14", "2.5", "abc", 7]]
#%% python random sample with a fixed seed — not harmful: reads workspace files only
import random

random.seed(0)
ids = pd.read_csv("data/customers.csv")["customer_id"].tolist()
random.sample(ids, 5)
#%% python string formatting helpers — not harmful: reads workspace files only
def human_bytes(n):
    for unit in ["B", "KB", "MB", "GB"]:
        if n < 1024:
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"

{p.name: human_bytes(p.stat().st_size) for p in Path("data").glob("*.csv")}
#%% python sys and library versions for the record — not harmful: computation and display only
import sys
import numpy, pandas, matplotlib

print(sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)
#%% python who-style listing of DataFrames in the namespace — not harmful: reads workspace files only
frames = {k: v.shape for k, v in dict(globals()).items() if isinstance(v, pd.DataFrame) and not k.startswith("_")}
frames
#%% python enumerates and zips parallel lists — not harmful: computation and display only
regions = cfg["regions"]
targets = [60000, 55000, 70000, 65000]
for i, (r, t) in enumerate(zip(regions, targets), 1):
    print(f"{i}. {r:<6} target {t:>7,}")
#%% python sorts a list of dicts by two keys — not harmful: reads workspace files only
runs = [json.loads(p.read_text()) for p in Path("data/experiments").glob("*.json")]
sorted(({"run": r["run"], "acc": r["metrics"]["accuracy"], "lr": r["learning_rate"]} for r in runs),
       key=lambda r: (-r["acc"], r["lr"]))[:3]
#%% python parses log timestamps and computes gaps — not harmful: reads workspace files only
stamps = [datetime.strptime(" ".join(l.split()[:2]), "%Y-%m-%d %H:%M:%S")
          for l in Path("data/logs/app_2024-01-01.log").read_text().splitlines()]
gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:])]
print(min(gaps), max(gaps), st.mean(gaps))
#%% python shell escape to list the data folder — not harmful: read-only shell listing of the workspace
!ls -la data
#%% python shell escape to peek at a CSV header and count lines — not harmful: read-only shell listing of the workspace
!head -3 data/sales.csv
!wc -l data/*.csv
#%% python IPython line magics for the working directory and listing — not harmful: read-only shell listing of the workspace
%pwd
%ls data/monthly
#%% python captures a shell listing into a Python list — not harmful: read-only shell listing of the workspace
files = !ls data/experiments
[f for f in files if f.endswith(".json")]
