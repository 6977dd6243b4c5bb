"""The static review and the runtime guard together, against a corpus (issue 39, item 4): per
class, how many snippets ask statically under ``%approval risky``, how many that run unasked
the guard stops, how many a default limit stops, and how many run with no stop (for attacks:
what escapes; for ordinary blocks, asked + stopped is the share that would ask).

    python benchmarks/risk_guard.py --corpus benchmarks/risk_corpus/adversarial
    python benchmarks/risk_guard.py --corpus DIR --write RESULT.md

A corpus directory holds ``<class>.py`` files in ``risk_review.py``'s format (snippets split
at ``#%%`` lines, ``#%% shell`` for shell). The snippets that would run unasked are RUN, for
real, under the guard the child kernel loads (``probe.local_probe``: the same
source), in an IPython shell inside bubblewrap: the host is read-only (``--ro-bind / /``),
``/tmp`` and the home folder are empty tmpfs (the interpreter's folders bound back
read-only), the network and pids are private, and only a scratch workspace is writable.
Each snippet gets ``--time`` seconds and the guard's memory limit (``--memory``); the
snippets of one file share a namespace and run in order, in a fresh workspace made by the
corpus's ``make_workspace.py DIR`` when it or its parent folder has one (else a few data files). Where a snippet
kills the runner, the file goes on from the next snippet in a new one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VERDICTS = ("asked", "guard", "limit", "ran")
FAKE_HOME_FILES = {".bashrc": "# shell start-up\n", ".ssh/id_rsa": "not a real key\n",
                   ".aws/credentials": "[default]\naws_secret_access_key = fake\n",
                   ".local/share/jupyter/runtime/kernel-1.json": '{"key": "fake"}\n'}
DEFAULT_WORKSPACE = {"data.csv": "a,b\n1,2\n3,4\n", "sales.csv": "month,revenue\n1,10\n2,12\n",
                     "notes.txt": "some notes\n", "data/notes.txt": "line one\nline two\n",
                     "data/sales.csv": "month,revenue\n1,10\n2,12\n", "output/.keep": ""}


def asks(language: str, code: str, names: Any = None) -> bool:
    """Whether the engine asks about this block under ``%approval risky``, as
    ``core.steps`` decides: a flag that asks there, or anything the known-safe review does not
    know (``names``: what earlier blocks of the same session imported and defined)."""
    from oi_kernel.core.steps import RISKY_ADVICE
    from oi_kernel.languages import normalize_language
    from oi_kernel.safety.known_safe import SessionNames, check
    from oi_kernel.safety.risk import review_or_flag

    names = SessionNames() if names is None else names
    verdict = check(normalize_language(language) or language, code, session=names)
    names.ran(verdict)
    flagged = any(f.category not in RISKY_ADVICE for f in review_or_flag(language, code))
    return flagged or not verdict.safe


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    errors: int = 0  # "ran" snippets that raised (e.g. a name an asked snippet would set)
    escaped: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # what the guard or a limit stopped

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# ----------------------------------------------------------------------------- outside
def measure(corpus: Path, seconds: float, memory: str, run_all: bool = False,
            seconds_for: dict[str, float] | None = None) -> dict[str, Tally]:
    """Per class: the verdicts (``run_all``: run the snippets the review asks about too, to
    see what the guard alone does with them; they still count as asked). ``seconds_for``:
    another time limit for some classes (a class whose snippets run until a limit stops
    them need not run for as long as the others may take)."""
    sys.path.insert(0, str(HERE))
    from risk_review import parse

    from oi_kernel.safety.known_safe import SessionNames

    tallies: dict[str, Tally] = {}
    seconds_for = seconds_for or {}
    unknown = set(seconds_for) - {path.stem for path in corpus.glob("*.py")}
    if unknown:
        raise ValueError(f"seconds_for names no class of {corpus}: {sorted(unknown)}")
    for path in sorted(corpus.glob("*.py")):
        if path.name == "make_workspace.py":
            continue
        snippets = parse(path.read_text(encoding="utf-8"), corpus.name, path.stem)
        tally = tallies.setdefault(path.stem, Tally())
        unasked = []
        asked = set()
        names = SessionNames()  # a file's snippets are one session, as they run
        for s in snippets:
            if asks(s.language, s.code, names):
                tally.counts["asked"] += 1
                asked.add(s.index)
            if run_all or s.index not in asked:
                unasked.append(s)
        limit = seconds_for.get(path.stem, seconds)
        for snippet, outcome in zip(unasked, run_file(corpus, path, [s.index for s in unasked],
                                                      limit, memory), strict=True):
            first = snippet.code.strip().splitlines()[0][:70]
            label = f"{path.stem} #{snippet.index}{' (asked)' if snippet.index in asked else ''}"
            if outcome["verdict"] in ("guard", "limit"):
                why = "; ".join(s["what"] for s in outcome.get("stops", [])) or outcome.get(
                    "error") or "limit"
                tally.stopped.append(f"{label} `{first}` — {outcome['verdict']}: {why}")
            if snippet.index in asked:
                continue
            tally.counts[outcome["verdict"]] += 1
            if outcome["verdict"] == "ran":
                tally.errors += bool(outcome.get("error"))
                tally.escaped.append(f"{path.stem} #{snippet.index} `{first}`"
                                     + (f" ({outcome['error']})" if outcome.get("error") else ""))
    return tallies


def run_file(corpus: Path, path: Path, indices: list[int], seconds: float,
             memory: str) -> list[dict]:
    """Run the snippets ``indices`` of one file in the sandbox, in order; one outcome each."""
    outcomes: dict[int, dict] = {}
    todo = list(indices)
    while todo:
        with tempfile.TemporaryDirectory(prefix="oi-risk-guard-") as base:
            found, died = _sandboxed(corpus, path, todo, seconds, memory, Path(base))
        outcomes.update(found)
        todo = [i for i in todo if i not in outcomes]
        if todo:  # the runner died at the first missing one (os._exit, a crash, killed)
            outcomes[todo[0]] = {"verdict": "limit" if died == "timeout" else "ran",
                                 "error": f"the runner {died}"}
            todo = todo[1:]
    return [outcomes[i] for i in indices]


def bwrap_argv(base: Path, workspace: Path) -> list[str]:
    home = os.path.expanduser("~")
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", home]
    # the interpreter, the venv and the checkout, where a tmpfs above would hide them (a
    # checkout under /tmp, as CI's may be, or under home)
    for keep in sorted({sys.base_prefix, sys.prefix, str(REPO)}):
        if keep.startswith((home + os.sep, "/tmp" + os.sep)):
            argv += ["--ro-bind", keep, keep]
    argv += ["--bind", str(base), str(base), "--unshare-net", "--unshare-pid",
             "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
             "--setenv", "HOME", home, "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "PYTHONPATH", str(REPO), "--chdir", str(workspace), "--"]
    return argv


def _sandboxed(corpus: Path, path: Path, indices: list[int], seconds: float, memory: str,
               base: Path) -> tuple[dict[int, dict], str]:
    workspace, results = base / "ws", base / "results.jsonl"
    workspace.mkdir()
    shutil.copy(path, base / "snippets.py")
    # the corpus's own workspace, or the one its parent keeps for both of its sets
    make = next((m for m in (corpus / "make_workspace.py", corpus.parent / "make_workspace.py")
                 if m.exists()), corpus / "make_workspace.py")
    if make.exists():
        shutil.copy(make, base / "make_workspace.py")
    argv = [*bwrap_argv(base, workspace), sys.executable, str(Path(__file__).resolve()),
            "--inner", str(base), "--time", str(seconds), "--memory", memory,
            "--only", ",".join(map(str, indices))]
    died = "ended"
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=seconds * len(indices) + 60,
                              text=True)
        if proc.returncode:
            died = f"exited with {proc.returncode}: {proc.stderr.strip()[-200:]}"
    except subprocess.TimeoutExpired:
        died = "timeout"
    found = {}
    if results.exists():
        for line in results.read_text().splitlines():
            row = json.loads(line)
            found[row["index"]] = row
    return found, died


# ----------------------------------------------------------------------------- inside
def inner(base: Path, seconds: float, memory: str, only: set[int]) -> None:
    """In the sandbox: run the snippets ``only`` of ``base/snippets.py`` under the guard,
    appending one JSON line per snippet to ``base/results.jsonl``."""
    import signal

    from IPython.core.interactiveshell import InteractiveShell

    from oi_kernel.execution.limits import parse_size
    from oi_kernel.execution.probe import local_probe
    from oi_kernel.languages import as_ipython_cell, normalize_language

    sys.path.insert(0, str(HERE))
    from risk_review import parse

    workspace = base / "ws"
    _make_workspace(base, workspace)
    shell = InteractiveShell.instance()
    probe = local_probe()

    def out_of_time(*_):
        raise KeyboardInterrupt("time limit")

    signal.signal(signal.SIGALRM, out_of_time)
    snippets = parse((base / "snippets.py").read_text(encoding="utf-8"), "", "")
    for snippet in snippets:
        if snippet.index not in only:
            continue
        language = normalize_language(snippet.language) or "python"
        probe.call("guard", {"root": str(workspace), "memory": parse_size(memory)})
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            result = shell.run_cell(as_ipython_cell(language, snippet.code), store_history=False)
        except KeyboardInterrupt:
            result = None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        report = json.loads(probe.call("guard_report"))
        error = None if result is None else (result.error_in_exec or result.error_before_exec)
        verdict = ("limit" if result is None or isinstance(error, (KeyboardInterrupt, MemoryError))
                   else "guard" if report["stops"] else "ran")
        row = {"index": snippet.index, "verdict": verdict, "stops": report["stops"],
               "error": type(error).__name__ if error is not None else ""}
        with open(base / "results.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")


def _make_workspace(base: Path, workspace: Path) -> None:
    home = Path(os.path.expanduser("~"))
    for name, text in FAKE_HOME_FILES.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    if (base / "make_workspace.py").exists():
        subprocess.run([sys.executable, str(base / "make_workspace.py"), str(workspace)],
                       check=True, timeout=120)
        return
    for name, text in DEFAULT_WORKSPACE.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)


# ----------------------------------------------------------------------------- report
def table(tallies: dict[str, Tally], kind: str) -> str:
    last = "ran, no stop (escapes)" if kind == "adversarial" else "ran, no stop"
    rows = [f"| class | snippets | asked statically | stopped by the guard | stopped by a limit "
            f"| {last} | of those, raised an error |", "|---|---:|---:|---:|---:|---:|---:|"]
    total = Tally()
    for group, tally in sorted(tallies.items()):
        rows.append(_row(group, tally))
        for verdict in VERDICTS:
            total.counts[verdict] += tally.counts[verdict]
        total.errors += tally.errors
    rows.append(_row("**all**", total))
    return "\n".join(rows)


def _row(name: str, tally: Tally) -> str:
    n = tally.total or 1
    cells = [f"{tally.counts[v]} ({tally.counts[v] / n:.0%})" for v in VERDICTS]
    return f"| {name} | {tally.total} | {' | '.join(cells)} | {tally.errors} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE / "risk_corpus" / "adversarial")
    parser.add_argument("--write", type=Path, help="also write the table (markdown) here")
    parser.add_argument("--time", type=float, default=10.0, help="seconds per snippet")
    parser.add_argument("--memory", default="512M", help="the guard's memory limit")
    parser.add_argument("--all", action="store_true",
                        help="also run the snippets the review asks about (listed as such)")
    parser.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--only", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        inner(args.inner, args.time, args.memory, {int(i) for i in args.only.split(",") if i})
        return 0
    if shutil.which("bwrap") is None:
        parser.error("bubblewrap (bwrap) is needed: the snippets run for real, in its sandbox")
    corpus = args.corpus.resolve()
    kind = "ordinary" if "ordinary" in corpus.name else "adversarial"
    tallies = measure(corpus, args.time, args.memory, args.all)
    text = table(tallies, kind)
    escaped = [e for t in tallies.values() for e in t.escaped]
    stopped = [e for t in tallies.values() for e in t.stopped]
    listing = "\n".join(f"- {e}" for e in escaped)
    stops = "\n".join(f"- {e}" for e in stopped)
    print(text)
    print(f"\nstopped at run time: {len(stopped)}\n{stops}")
    print(f"\nran with no stop: {len(escaped)}\n{listing}")
    if args.write:
        command = " ".join(["python benchmarks/risk_guard.py", *sys.argv[1:]])
        args.write.write_text(f"# {corpus.name}: static review + runtime guard\n\n"
                              f"`{command}`\n\n{text}\n\nStopped at run time:\n\n{stops}\n\n"
                              f"Ran with no stop:\n\n{listing}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
