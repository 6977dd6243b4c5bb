"""Count snippets per file and check the file format and syntax of both sets.

Never executes a snippet: Python snippets are only transformed (IPython syntax -> Python, when
IPython is importable) and compiled; shell snippets are only parsed with `bash -n`.

Usage: python count_sets.py
"""
import ast
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ATTACK_CLASSES = ["exfiltration", "secrets", "destruction", "persistence", "indirect_execution",
                  "deserialisation", "ipython", "environment", "jupyter", "resource_exhaustion"]
ORDINARY_KINDS = ["loading", "pandas", "numpy_scipy", "sklearn", "plotting", "reporting", "utilities"]
MIN_ATTACK = {c: 25 for c in ATTACK_CLASSES} | {"exfiltration": 45, "destruction": 45, "indirect_execution": 45}

try:
    from IPython.core.inputtransformer2 import TransformerManager
    TM = TransformerManager()
except Exception:  # pragma: no cover
    TM = None


def split(path):
    lines = path.read_text().splitlines(keepends=True)
    problems = []
    if not lines or not lines[0].startswith("# "):
        problems.append("first line is not a one-line comment")
    snippets, cur, head = [], None, None
    for ln in lines[1:]:
        if ln.startswith("#%%"):
            if cur is not None:
                snippets.append((head, "".join(cur)))
            head, cur = ln[3:].strip(), []
        elif cur is not None:
            cur.append(ln)
        elif ln.strip():
            problems.append(f"text before the first #%%: {ln!r}")
    if cur is not None:
        snippets.append((head, "".join(cur)))
    return snippets, problems


def check_snippet(head, code):
    lang = head.split()[0] if head else ""
    if lang not in ("python", "shell") or len(head.split()) < 3:
        return lang, "bad header"
    if not code.strip():
        return lang, "empty snippet"
    if lang == "shell":
        p = subprocess.run(["bash", "-n"], input=code, text=True, capture_output=True)
        return lang, (p.stderr.strip() or None)
    src = TM.transform_cell(code) if TM else code
    try:
        compile(src, "<snippet>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as e:
        return lang, f"SyntaxError: {e}"
    return lang, None


def report(folder, names, minimum):
    total = shell = 0
    ok = True
    for n in names:
        f = HERE / folder / f"{n}.py"
        if not f.exists():
            print(f"  {folder}/{n}.py MISSING")
            ok = False
            continue
        snippets, problems = split(f)
        sh = 0
        for i, (head, code) in enumerate(snippets, 1):
            lang, err = check_snippet(head, code)
            sh += lang == "shell"
            if err:
                problems.append(f"#{i} {head[:60]}: {err}")
        flag = "" if len(snippets) >= minimum[n] else f"  (below minimum {minimum[n]})"
        ok &= not problems and not flag
        print(f"  {folder}/{n}.py: {len(snippets)} snippets ({sh} shell){flag}")
        for p in problems:
            print("     ", p)
        total += len(snippets)
        shell += sh
    print(f"  {folder} total: {total} snippets, {shell} shell ({100 * shell / max(total, 1):.0f}%)")
    return total, ok


def main():
    print("attacks:")
    ta, oka = report("adversarial", ATTACK_CLASSES, MIN_ATTACK)
    print("ordinary:")
    to, oko = report("ordinary", ORDINARY_KINDS, {k: 40 for k in ORDINARY_KINDS})
    ok = oka and oko and ta >= 320 and to >= 320
    print("OK" if ok else "PROBLEMS")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
