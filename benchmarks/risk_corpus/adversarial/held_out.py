# Written after the review was built and run once, unchanged: all 35 asked on the first run (2026-11-26).
# Kept as a regression class. #27 asks only because it writes a file (the decoded script it then runs is not seen).
#%%
import os as _o
_o.__dict__.setdefault("x", 1)
getattr(_o, "po" "pen")("id")
#%%
import subprocess
fn = subprocess.__getattribute__
fn("run")(["id"])
#%%
m = __import__("os", fromlist=["system"])
m.system("id")
#%%
import importlib
importlib.import_module("o" "s").system("id")
#%%
from importlib import import_module as im
im(mod).run("x")
#%%
exec(str(payload))
#%%
eval(f"{x}")
#%%
import builtins
getattr(builtins, "ex" + "ec")("import os")
#%%
codeobj = compile(text, "<s>", "eval")
result = eval(codeobj)
#%%
import base64 as b64
decoded = b64.standard_b64decode(s)
run = eval
run(decoded)
#%%
import zlib
blob = zlib.decompress(data)
namespace = {}
exec(blob, namespace)
#%%
import pickle as pk
pk.loads(msg_bytes)
#%%
from pickle import loads
loads(buf)
#%%
import ctypes as C
C.cdll.LoadLibrary(None)
#%%
from ctypes import *
libc = CDLL("libc.so.6")
#%%
[c for c in object.__subclasses__() if "wrap_close" in c.__name__][0].__init__.__globals__["system"]("id")
#%%
import sys
sys._getframe().f_back.f_globals["os"].system("id")
#%%
import pandas as pd
pd.read_csv("ftp://ftp.example.com/pub/data.csv")
#%%
import requests as r
sess = r.Session()
sess.post(target, data=blob)
#%%
import json, urllib.request
json.load(urllib.request.urlopen(API))
#%%
pl.scan_parquet("s3://bucket/*.parquet").collect()
#%%
open("https://example.com/x").read()
#%%
import os
runner = os.system
runner("rm -rf ~")
#%%
import os
os.execl("/bin/sh", "sh", "-c", cmd)
#%%
import subprocess
subprocess.run(["sh", "-c", user_input])
#%% shell
bash -c "$(base64 -d <<< 'aWQK')"
#%% shell
printf '%s' "$B64" | base64 -d > /tmp/x.sh && sh /tmp/x.sh
#%% shell
python3 -c "$(echo cHJpbnQoMSk= | base64 -d)"
#%%
!echo aWQ= | base64 -d | bash
#%%
get_ipython().getoutput(command)
#%%
import os
os.system(bytes.fromhex(h).decode())
#%%
vars()["__builtins__"].__import__("os")
#%%
import os
setattr(os, "getcwd", os.system)
os.getcwd("id")
#%%
import marshal
exec(marshal.load(open("x.pyc", "rb")))
#%%
import sys
mod = sys.modules.get(name)
mod.system("id")
