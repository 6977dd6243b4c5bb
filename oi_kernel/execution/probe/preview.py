"""Preview: run a block in a disposable copy of the process and report what it would do.
The last part of the probe (see the package's docstring).

``preview(code, language, timeout_s)`` forks the process (copy-on-write, as a checkpoint
does). The fork enters new user, mount and network namespaces (``isolate``): the
workspace and ``/tmp`` become copy-on-write overlays whose changes live in a private tmpfs,
the rest of the file system is read-only, and only a loopback that is down exists, so a
connection fails at once (each attempt seen by Python's audit hook is recorded; Unix sockets,
which a network namespace does not cover, are refused there too). The fork runs the block,
scans the files before and after (no inotify: the kernel's watches stay its own), compares
the namespace's fingerprints, sends one JSON answer through a pipe and exits, so nothing it
did outlives it. The parent waits up to ``timeout_s``; a fork that overstays is killed.
"""

import json
import os
import select
import shutil
import signal
import sys
import time

from .changes import (
    Settings,
    _namespace,
    _shell,
    _State,
    _walk,
    diff_files,
    diff_variables,
    fingerprints,
    scan,
)
from .checkpoints import _CALLS, _die_with_parent
from .isolate import isolate, isolation_libc
from .overlay import overlay_changes
from .scratch import enter_scratch, scratch_path
from .watch import _Watch

PREVIEW_SCAN_S = 10.0  # the fork's scans: a preview waits for a complete list
MAX_ANSWER = 20_000_000


class _Net:
    tried = []
    refuse_names = False  # a scratch copy has the real network: names are not looked up


def _net_audit(event, args):
    """In the fork: record each connection tried (and refuse Unix sockets, which a network
    namespace does not isolate)."""
    if event == "socket.connect" and len(args) > 1:
        address = args[1]
        if isinstance(address, tuple) and len(address) >= 2:
            _Net.tried.append(f"{address[0]}:{address[1]}")
        elif isinstance(address, (str, bytes)):
            where = address.decode(errors="replace") if isinstance(address, bytes) else address
            _Net.tried.append(f"unix:{where}")
            raise PermissionError(1, "Unix sockets are blocked in a preview")
    elif event == "socket.getaddrinfo" and args and args[0] not in (None, "", b""):
        host = args[0].decode(errors="replace") if isinstance(args[0], bytes) else args[0]
        if host not in ("localhost", "127.0.0.1", "::1"):
            _Net.tried.append(f"{host}:{args[1] if len(args) > 1 else ''}")
            if _Net.refuse_names:
                raise PermissionError(1, "the network is blocked in a preview")


def _error_output(exc):
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<preview>":
        tb = tb.tb_next  # the block's own frames only
    lines = traceback.format_exception(type(exc), exc, tb)
    return {"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc),
            "traceback": ["".join(lines).rstrip("\n")]}


def _exec_block(source, ns):
    """Run ``source`` as a cell: statements, then the last expression's value (or None)."""
    import ast

    tree = ast.parse(source, "<preview>")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<preview>", "exec"), ns)  # noqa: S102
    if last is not None:
        return eval(compile(last, "<preview>", "eval"), ns)  # noqa: S307
    return None


def _formatted(shell, value):
    if shell is not None:
        data, _meta = shell.display_formatter.format(value)
        return data
    return {"text/plain": repr(value)}


def _figures(shell):
    """Open matplotlib figures, as the inline backend would show them after the cell."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or shell is None:
        return []
    shown = []
    for num in plt.get_fignums():
        data = _formatted(shell, plt.figure(num))
        if data:
            shown.append({"output_type": "display_data", "data": data, "metadata": {}})
    return shown


def _run_python(code):
    """The block's outputs (nbformat-like) and status, run in the namespace of this copy."""
    import io

    shell = _shell()
    ns = _namespace()
    source = shell.transform_cell(code) if shell is not None else code
    out, err, displays = io.StringIO(), io.StringIO(), []
    saved = sys.stdout, sys.stderr, getattr(shell, "display_pub", None)
    sys.stdout, sys.stderr = out, err
    if shell is not None:
        from IPython.core.displaypub import CapturingDisplayPublisher

        shell.display_pub = CapturingDisplayPublisher()
    status, value, failure = "ok", None, None
    try:
        value = _exec_block(source, ns)
    except BaseException as exc:  # the copy reports every way the block ends
        status, failure = "error", _error_output(exc)
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        if shell is not None:
            displays = [{"output_type": "display_data", "data": o.data,
                         "metadata": o.metadata or {}} for o in shell.display_pub.outputs]
            shell.display_pub = saved[2]
    outputs = [{"output_type": "stream", "name": name, "text": buf.getvalue()}
               for name, buf in (("stdout", out), ("stderr", err)) if buf.getvalue()]
    outputs += displays + _figures(shell)
    if value is not None and status == "ok":
        outputs.append({"output_type": "execute_result", "data": _formatted(shell, value),
                        "metadata": {}})
    return status, outputs + ([failure] if failure else [])


def _run_shell(code):
    import subprocess

    done = subprocess.run(["bash", "-c", code], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    outputs = [{"output_type": "stream", "name": name, "text": text}
               for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if text]
    if done.returncode:
        outputs.append({"output_type": "error", "ename": "CalledProcessError",
                        "evalue": f"the shell step exited with status {done.returncode}",
                        "traceback": []})
    return ("error" if done.returncode else "ok"), outputs


def _files_now(root):
    found, complete = _walk(root, budget_s=PREVIEW_SCAN_S)
    return {rel: st[:2] for rel, st in found.items()}, complete  # (an overlay's inodes move)


def _enter_copy(root, scratch):
    """Make this fork the disposable copy: namespaces and overlays, else a scratch copy
    under Landlock. Returns (the copy's working directory, how it was made, why not)."""
    why = isolate(root)
    if not why:
        os.chdir(root)  # (the overlay now lies over the old working directory)
        return root, "overlay", ""
    fallback = enter_scratch(root, scratch, frozenset(Settings.skip_dirs))
    if not fallback:
        _Net.refuse_names = True
        return scratch, "scratch copy", ""
    return "", "", f"{why}; and no scratch copy either: {fallback}"


def _file_changes(root, copy, before, run):
    """Run ``run()``; the files it changed: from the overlay's upper layer when the listing
    before (``before``: the kernel's own, kept current by inotify) is complete, else from
    complete listings before and after in the copy."""
    if copy == "overlay" and before is not None:
        run()
        found = overlay_changes(os.path.realpath(root), before)
        if found is not None:
            after = dict(before)
            for rel in found[1]:
                after.pop(rel, None)
            after.update(found[0])
            return diff_files(before, after), True
    files_before, complete_before = _files_now(root)
    run()
    files_after, complete_after = _files_now(root)
    return diff_files(files_before, files_after), complete_before and complete_after


def _in_copy(code, language, root, scratch, before):
    """The fork's whole life: isolate, run, compare, answer."""
    root, copy, why = _enter_copy(root, scratch)
    if why:
        return {"status": "unavailable", "why": why}
    sys.addaudithook(_net_audit)
    before_vars = fingerprints(_namespace())
    ran = {}

    def run():
        started = time.perf_counter()
        ran["status"], ran["outputs"] = (_run_python(code) if language == "python"
                                         else _run_shell(code))
        ran["s"] = time.perf_counter() - started

    files, complete = _file_changes(root, copy, before, run)
    changes = {"variables": diff_variables(before_vars, fingerprints(_namespace())),
               "files": files, "scan_complete": complete}
    return {"status": ran["status"], "outputs": ran["outputs"], "changes": changes,
            "network": list(dict.fromkeys(_Net.tried)), "run_s": round(ran["s"], 4),
            "copy": copy}


def _fork_main(code, language, root, scratch, before, read_fd, write_fd, parent):
    os.close(read_fd)
    os.setpgid(0, 0)  # its own group: the kernel's interrupts are not its, and it dies whole
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if _Watch.fd >= 0:
        os.close(_Watch.fd)
    _State.current = None  # no pre-images saved for a checkpoint from the copy
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(0)
    try:
        answer = _in_copy(code, language, root, scratch, before)
    except BaseException as exc:
        answer = {"status": "unavailable", "why": f"the copy failed: {type(exc).__name__}: {exc}"}
    data = json.dumps(answer, default=repr).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(write_fd, view[:65536]):]
    os._exit(0)


def _listed_before(root):
    """The workspace's files now, as the kernel lists them (inotify keeps it current; a full
    listing when that one was cut short), or None when no complete listing could be made."""
    try:
        files, complete = scan(root)
        if not complete:  # (cut by the session's budget: a preview waits for a full list)
            files, complete = _walk(root, budget_s=PREVIEW_SCAN_S)
    except OSError:
        return None
    return {rel: st[:2] for rel, st in files.items()} if complete else None


def _read_answer(read_fd, pid, timeout_s):
    """The fork's answer, or None when it did not come within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([read_fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER:
            return b"".join(chunks)


def _end_fork(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def preview(code, language="python", timeout_s=30.0):
    """Run ``code`` in a disposable copy; what it printed, raised and changed, and the
    connections it tried. ``status``: ok, error, timeout or unavailable (``why``)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return {"status": "unavailable", "why": "a preview needs Linux (fork and namespaces)"}
    isolation_libc()
    _die_with_parent(prepare=True)
    root, scratch = os.getcwd(), scratch_path()
    before = _listed_before(root)
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pid = -1
    try:
        pid = os.fork()
    finally:
        if pid != 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _fork_main(code, language, root, scratch, before, read_fd, write_fd, os.getppid())
    os.close(write_fd)
    try:
        data = _read_answer(read_fd, pid, timeout_s)
    finally:
        os.close(read_fd)
        _end_fork(pid)
        for left in (scratch, scratch + "-tmp"):
            shutil.rmtree(left, ignore_errors=True)
    took = round(time.perf_counter() - started, 4)
    if data is None:
        return {"status": "timeout", "timeout_s": timeout_s, "duration_s": took, "outputs": [],
                "network": [], "changes": {}}
    try:
        answer = json.loads(data)
    except ValueError:
        answer = {"status": "unavailable", "why": "the copy ended without an answer (it "
                  "exited or was killed, e.g. by the memory limit)"}
    answer["duration_s"] = took
    return answer


_CALLS["preview"] = preview
