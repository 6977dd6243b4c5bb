# Reading and writing files inside the workspace, listing folders, paths.
#%%
from pathlib import Path
for p in sorted(Path("data").iterdir()):
    print(p.name, p.stat().st_size)
#%%
import os
os.listdir("data")
#%%
import os
os.makedirs("output/figures", exist_ok=True)
#%%
from pathlib import Path
Path("output/tables").mkdir(parents=True, exist_ok=True)
#%%
with open("data/notes.txt") as f:
    lines = f.read().splitlines()
len(lines)
#%%
with open("data/notes.txt", encoding="utf-8") as fh:
    for i, line in enumerate(fh):
        if i < 5:
            print(line.rstrip())
#%%
text = Path("README.md").read_text(encoding="utf-8")
print(text[:500])
#%%
import glob
csvs = glob.glob("data/**/*.csv", recursive=True)
len(csvs)
#%%
import os
size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk("data") for f in files)
print(f"{size / 1e6:.1f} MB")
#%%
with open("output/log.txt", "a") as log:
    log.write(f"run finished, {len(df)} rows\n")
#%%
import os
base = os.path.dirname(os.path.abspath("analysis.ipynb"))
data_dir = os.path.join(base, "data")
#%%
from pathlib import Path
out = Path("output") / "summary.csv"
summary.to_csv(out, index=False)
#%%
import csv
with open("data/contacts.csv", newline="") as f:
    rows = list(csv.DictReader(f))
rows[0]
#%%
import zipfile
with zipfile.ZipFile("data/archive.zip") as z:
    print(z.namelist()[:10])
#%%
import zipfile
with zipfile.ZipFile("data/archive.zip") as z:
    z.extract("2023/sales.csv", path="data/extracted")
#%%
import tarfile
with tarfile.open("data/logs.tar.gz") as tar:
    names = tar.getnames()
#%%
import gzip
with gzip.open("data/events.json.gz", "rt") as f:
    first = f.readline()
#%%
import os
os.getcwd()
#%%
from pathlib import Path
Path.cwd(), Path.home().name
#%%
import shutil
shutil.copy("data/template.xlsx", "output/report.xlsx")
#%%
import os
if os.path.exists("cache/features.parquet"):
    feats = pd.read_parquet("cache/features.parquet")
#%%
from pathlib import Path
latest = max(Path("exports").glob("*.csv"), key=lambda p: p.stat().st_mtime)
df = pd.read_csv(latest)
#%%
import yaml
with open("config/params.yaml") as f:
    params = yaml.safe_load(f)
#%%
import tomllib
with open("pyproject.toml", "rb") as f:
    meta = tomllib.load(f)
#%%
import h5py
with h5py.File("data/signals.h5", "r") as h5:
    sig = h5["ecg"][:]
#%%
import pyarrow.parquet as pq
table = pq.read_table("data/events.parquet", columns=["user", "ts"])
#%%
from PIL import Image
img = Image.open("images/sample.jpg").convert("L").resize((128, 128))
#%%
from PIL import Image
img.save("output/thumb.png")
#%%
import json
with open("data/config.json") as f:
    cfg = json.load(f)
#%%
import hashlib
digest = hashlib.sha256(Path("data/sales.csv").read_bytes()).hexdigest()
digest[:12]
#%%
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    df.to_csv(f"{tmp}/x.csv")
    back = pd.read_csv(f"{tmp}/x.csv")
#%%
files = [f for f in os.listdir("data") if f.endswith(".csv")]
frames = {os.path.splitext(f)[0]: pd.read_csv(os.path.join("data", f)) for f in files}
#%%
with open("output/results.md", "w") as f:
    f.write(summary.to_markdown())
#%%
with open("output/metrics.json", "w") as f:
    json.dump(metrics, f, indent=2)
#%%
import os
stat = os.stat("data/sales.csv")
stat.st_size, stat.st_mtime
#%%
import fnmatch
matches = [n for n in os.listdir("data") if fnmatch.fnmatch(n, "sales_2024*.csv")]
#%%
from pathlib import Path
p = Path("data/raw/report_final.csv")
p.stem, p.suffix, p.parent
#%%
with open("data/big.log") as f:
    errors = sum(1 for line in f if "ERROR" in line)
errors
#%%
import io
buf = io.StringIO()
df.to_csv(buf, index=False)
csv_text = buf.getvalue()
#%%
import sqlite3
with sqlite3.connect("data/local.db") as con:
    con.execute("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, score REAL)")
    con.execute("INSERT INTO runs (score) VALUES (?)", (score,))
#%%
df.to_sql("sales", sqlite3.connect("data/local.db"), if_exists="replace", index=False)
