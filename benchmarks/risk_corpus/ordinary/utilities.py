# Small helpers an analyst writes: functions, classes, timing, logging, progress, magics.
#%%
def pct(a, b):
    return 0 if b == 0 else 100 * a / b

pct(3, 40)
#%%
from dataclasses import dataclass

@dataclass
class Run:
    name: str
    score: float

runs = sorted([Run("a", 0.7), Run("b", 0.9)], key=lambda r: r.score, reverse=True)
#%%
import time
start = time.perf_counter()
result = expensive(df)
print(f"took {time.perf_counter() - start:.2f}s")
#%%
%%time
totals = df.groupby("store")["revenue"].sum()
#%%
%timeit np.sort(x)
#%%
from tqdm.auto import tqdm
results = [score(row) for row in tqdm(rows)]
#%%
import logging
logging.basicConfig(level=logging.INFO)
log = logging.getLogger("analysis")
log.info("loaded %d rows", len(df))
#%%
from functools import lru_cache

@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib(80)
#%%
import itertools
pairs = list(itertools.combinations(cols, 2))
len(pairs)
#%%
import random
random.seed(0)
sample = random.sample(ids, k=20)
#%%
chunks = [items[i:i + 100] for i in range(0, len(items), 100)]
#%%
from collections import namedtuple
Point = namedtuple("Point", "x y")
pts = [Point(1, 2), Point(3, 4)]
#%%
import warnings
warnings.filterwarnings("ignore", category=FutureWarning)
#%%
import sys
sys.version, sys.platform
#%%
import platform
platform.python_version()
#%%
import os
os.cpu_count()
#%%
import os
os.environ.get("TZ", "UTC")
#%%
try:
    value = float(raw)
except ValueError:
    value = None
#%%
def safe_div(a, b, default=float("nan")):
    try:
        return a / b
    except ZeroDivisionError:
        return default
#%%
class Timer:
    def __enter__(self):
        self.t = time.perf_counter()
        return self
    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.t
#%%
from typing import Iterable
def mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)
#%%
config = {"threshold": 0.5, "min_count": 10}
threshold = config.get("threshold", 0.4)
#%%
getattr(model, "n_features_in_", None)
#%%
for attr in ("coef_", "intercept_"):
    if hasattr(reg, attr):
        print(attr, getattr(reg, attr))
#%%
setattr(settings, "verbose", True)
#%%
import importlib
import helpers
importlib.reload(helpers)
#%%
%load_ext autoreload
%autoreload 2
#%%
import importlib.metadata
{p: importlib.metadata.version(p) for p in ("pandas", "numpy", "scikit-learn")}
#%%
%who
#%%
!ls -la data
#%%
!head -n 5 data/sales.csv
#%%
!wc -l data/*.csv
#%%
%pwd
#%%
%%capture
import noisy_module
#%%
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(max_workers=4) as ex:
    out = list(ex.map(process, files))
#%%
from joblib import Parallel, delayed
res = Parallel(n_jobs=2)(delayed(fit_one)(k) for k in range(5))
#%%
import gc
del big_df
gc.collect()
#%%
import operator
sorted(records, key=operator.itemgetter("date"))
#%%
from operator import attrgetter
sorted(runs, key=attrgetter("score"))
#%%
assert df["id"].is_unique, "duplicate ids"
#%%
import numbers
isinstance(x, numbers.Number)
#%%
vals = eval("[1, 2, 3]")
#%%
import ast
ast.literal_eval("{'a': 1, 'b': [2, 3]}")
#%%
import copy
df2 = copy.deepcopy(df)
#%%
from IPython.display import display
for name, frame in frames.items():
    print(name)
    display(frame.head(3))
#%%
import sys
print(sys.getsizeof(df) / 1e6, "MB")
#%%
import inspect
print(inspect.signature(pd.read_csv))
#%%
help(pd.merge)
#%%
type(model).__name__, model.__class__.__name__
#%%
print(vars(args))
#%%
import pprint
pprint.pprint(params)
#%%
from datetime import datetime
stamp = datetime.now().strftime("%Y%m%d-%H%M")
out_name = f"output/report_{stamp}.csv"
df.to_csv(out_name)
#%%
import subprocess
subprocess.run(["git", "status", "--short"], check=False)
#%%
import os
os.environ["TOKENIZERS_PARALLELISM"] = "false"
