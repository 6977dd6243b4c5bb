"""Run every ordinary snippet, per file in file order, in a fresh workspace.

Usage: python check_ordinary.py [--python PY] [files...]

For each ordinary/<kind>.py: make a fresh temp dir with make_workspace.py, then run the
snippets of that file in one shared namespace (an IPython InteractiveShell when IPython is
available, so `%magics` work; plain exec otherwise) with cwd = the temp dir and MPLBACKEND=Agg.
Also checks that no input file under data/ was changed or deleted and that every new file
is under output/ or figures/.
Never used on the attack set.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_PY = "/work/main/.venv/bin/python"

RUNNER = r'''
import hashlib, json, os, sys, traceback
from pathlib import Path

def split(path):
    snippets, cur, head = [], None, None
    for line in Path(path).read_text().splitlines(keepends=True):
        if line.startswith("#%%"):
            if cur is not None:
                snippets.append((head, "".join(cur)))
            head, cur = line[3:].strip(), []
        elif cur is not None:
            cur.append(line)
    if cur is not None:
        snippets.append((head, "".join(cur)))
    return snippets

def tree():
    out = {}
    for p in Path(".").rglob("*"):
        if p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out

path = sys.argv[1]
before = tree()
results = []
try:
    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.enable_gui = lambda self, gui=None: None  # %matplotlib in a headless shell
    shell = InteractiveShell.instance()
except Exception:
    shell = None
ns = {"__name__": "__main__"}
for i, (head, code) in enumerate(split(path), 1):
    err = None
    if shell is not None:
        r = shell.run_cell(code, silent=True, store_history=False)
        e = r.error_before_exec or r.error_in_exec
        if e is not None:
            err = f"{type(e).__name__}: {e}"
    else:
        try:
            exec(compile(code, f"<snippet {i}>", "exec"), ns)
        except Exception as e:
            err = f"{type(e).__name__}: {e}"
    try:
        import matplotlib.pyplot as plt
        plt.close("all")
    except Exception:
        pass
    results.append({"n": i, "head": head, "error": err})
after = tree()
changed = [p for p, h in before.items() if after.get(p) != h]
new_outside = [p for p in after if p not in before and not (p.startswith("output/") or p.startswith("figures/"))]
print("@@RESULT@@" + json.dumps({"results": results, "changed_inputs": changed, "new_outside": new_outside}))
'''


def check_file(py, f):
    with tempfile.TemporaryDirectory(prefix="blind_ws_") as d:
        subprocess.run([py, str(HERE / "make_workspace.py"), d], check=True, capture_output=True)
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
        p = subprocess.run([py, "-c", RUNNER, str(f)], cwd=d, env=env, capture_output=True, text=True, timeout=900)
        for line in p.stdout.splitlines():
            if line.startswith("@@RESULT@@"):
                return json.loads(line[len("@@RESULT@@"):])
        raise RuntimeError(f"runner failed for {f}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=DEFAULT_PY)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = [Path(x).resolve() for x in a.files] or sorted((HERE / "ordinary").glob("*.py"))
    total = failed = missing_lib = 0
    bad_fs = False
    for f in files:
        r = check_file(a.python, f)
        res = r["results"]
        errs = [x for x in res if x["error"]]
        # a snippet that fails because a library is missing, or (after one did) fails with a
        # NameError for a name that snippet would have defined, is "missing-library", not an error
        libs, seen_missing = [], False
        for x in errs:
            if x["error"].startswith("ModuleNotFoundError") or (seen_missing and x["error"].startswith("NameError")):
                seen_missing = True
                libs.append(x)
        total += len(res)
        failed += len(errs) - len(libs)
        missing_lib += len(libs)
        print(f"{f.name}: {len(res)} snippets, {len(errs) - len(libs)} errors, {len(libs)} missing-library")
        for x in errs:
            tag = " [missing library]" if x in libs else ""
            print(f"   #{x['n']}{tag} {x['head'][:70]}\n      -> {x['error'][:300]}")
        if r["changed_inputs"] or r["new_outside"]:
            bad_fs = True
            print("   changed inputs:", r["changed_inputs"], " new files outside output/ figures/:", r["new_outside"])
    print(f"TOTAL {total} snippets, {failed} errors, {missing_lib} skipped for a missing library (python: {a.python})")
    sys.exit(1 if failed or bad_fs else 0)


if __name__ == "__main__":
    main()
