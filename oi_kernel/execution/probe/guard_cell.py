"""The runtime guard around a cell: the second part of the guard (see ``guard.py``).

``guard_arm`` has IPython's ``pre_run_cell`` turn the guard on for the next cell
(``guard_on``) and its ``post_run_cell`` turn it off (``guard_off``), which also compares
what no audit event reports (``sys.path``, import hooks, builtins, IPython's event and
input-transformer lists, the exception and display hooks), puts it back and records a stop;
``guard_taken`` hands the report to the engine. Code a guarded cell leaves behind stays
guarded: threads it starts (``threading.Thread`` marks them), exit handlers and finalizers
it registers (``_Later``), asyncio callbacks and tasks (they carry the context variable).
The memory limit is ``RLIMIT_AS`` lowered to what the kernel uses plus the step's share,
and put back after the cell.
"""

import builtins
import os
import sys
import threading
import types

from .changes import _shell
from .guard import (
    _GUARDED,
    _folders,
    _get_ident,
    _Guard,
    _real,
    guarded,
)

_DISPLAY_LIBRARIES = frozenset({"matplotlib", "matplotlib_inline", "ipykernel", "IPython",
                                "ipywidgets", "plotly", "bokeh", "altair", "seaborn", "tqdm"})


# ----------------------------------------------------------------------------- state
def _watched():
    """(label, read, write) of what no audit event reports a change of."""
    shell = _shell()
    items = [("sys.path", lambda: sys.path, lambda v: setattr(sys, "path", v)),
             ("sys.meta_path (import hooks)", lambda: sys.meta_path,
              lambda v: setattr(sys, "meta_path", v)),
             ("sys.path_hooks (import hooks)", lambda: sys.path_hooks,
              lambda v: setattr(sys, "path_hooks", v)),
             ("sys.excepthook", lambda: sys.excepthook, lambda v: setattr(sys, "excepthook", v)),
             ("sys.displayhook", lambda: sys.displayhook,
              lambda v: setattr(sys, "displayhook", v)),
             ("sys.breakpointhook", lambda: sys.breakpointhook,
              lambda v: setattr(sys, "breakpointhook", v)),
             ("threading.excepthook", lambda: threading.excepthook,
              lambda v: setattr(threading, "excepthook", v))]
    if shell is not None:
        for name in ("input_transformers_cleanup", "input_transformers_post",
                     "ast_transformers"):
            if isinstance(getattr(shell, name, None), list):
                items.append((f"IPython's {name}", lambda n=name: getattr(shell, n),
                              lambda v, n=name: setattr(shell, n, v)))
        callbacks = getattr(getattr(shell, "events", None), "callbacks", None)
        if isinstance(callbacks, dict):
            for name in list(callbacks):
                items.append((f"IPython's {name} events", lambda n=name: callbacks[n],
                              lambda v, n=name: callbacks.__setitem__(n, v)))
    return items


def _snapshot():
    state = [(label, read, write, read(), _copy(read())) for label, read, write in _watched()]
    return state, dict(builtins.__dict__), atexit_swap()


def _copy(value):
    return list(value) if isinstance(value, list) else value


def _compare(saved):
    """Undo what changed since ``_snapshot`` and record a stop for each."""
    state, builtin_names, swapped = saved
    unswap(swapped)
    for label, read, write, obj, content in state:
        now = read()
        if label.endswith(" events") and now is obj and _display_hooks_added(content, now):
            continue
        if now is not obj or (isinstance(obj, list) and now != content):
            if isinstance(obj, list):
                obj[:] = content
            write(obj)
            _Guard.stops.append({"event": "state", "what": f"changing {label}"})
    now = builtins.__dict__
    changed = sorted(k for k in set(now) | set(builtin_names)
                     if now.get(k, _compare) is not builtin_names.get(k, _compare))
    if changed:
        for name in changed:
            if name in builtin_names:
                now[name] = builtin_names[name]
            else:
                del now[name]
        _Guard.stops.append({"event": "state", "what": "changing builtins: "
                             + ", ".join(changed[:5])})


def _display_hooks_added(before, now):
    """Whether ``now`` is ``before`` plus functions of display libraries (matplotlib's
    inline backend registers ``post_execute`` when pyplot is first imported)."""
    if any(not any(x is y for y in now) for x in before):
        return False
    added = [x for x in now if not any(x is y for y in before)]
    return all(type(x) is types.FunctionType and str(getattr(x, "__module__", "")).split(".")[0]
               in _DISPLAY_LIBRARIES for x in added)


# ------------------------------------------------------------------ later code of a step
class _Later:
    """A function a guarded step left to run later (an exit handler, a finalizer): guarded
    when it runs."""

    def __init__(self, func):
        self.func = func
        self.step = _GUARDED.get() or _Guard.serial  # the guarded step that left it

    def __call__(self, *args, **kwargs):
        token = _GUARDED.set(self.step)
        try:
            return self.func(*args, **kwargs)
        finally:
            _GUARDED.reset(token)


def atexit_swap():
    """While the step runs, ``atexit.register`` and ``weakref.finalize`` keep their
    functions guarded (``_Later``); returns what to put back."""
    import atexit
    import weakref

    register, finalize = atexit.register, weakref.finalize

    def guarded_register(func, *args, **kwargs):
        register(_Later(func), *args, **kwargs)
        return func

    class GuardedFinalize(finalize):
        def __init__(self, obj, func, /, *args, **kwargs):
            super().__init__(obj, _Later(func), *args, **kwargs)

    atexit.register, weakref.finalize = guarded_register, GuardedFinalize
    return register, finalize


def unswap(swapped):
    import atexit
    import weakref

    atexit.register, weakref.finalize = swapped


def _thread_start(start):
    def started(self):  # a thread started by guarded code is guarded (in ``_bootstrap``)
        if guarded():
            self._oi_guarded = _GUARDED.get() or _Guard.serial
        return start(self)
    return started


def _thread_bootstrap(bootstrap):
    def run(self):  # the thread's own context is guarded: its code, and the callbacks and
        if getattr(self, "_oi_guarded", 0):  # tasks it makes; not work others hand it
            _GUARDED.set(self._oi_guarded)  # (a loop's callbacks keep their sender's context)
        return bootstrap(self)
    return run


def _pool_submit(submit):
    def guarded_submit(self, fn, /, *args, **kwargs):  # a pool does not pass the context on
        return submit(self, _Later(fn) if guarded() else fn, *args, **kwargs)
    return guarded_submit


# ----------------------------------------------------------------------------- the cell
def guard_arm(settings):
    """Guard the next cell (IPython's ``pre_run_cell``; its ``post_run_cell`` ends it)."""
    shell = _shell()
    if shell is None:
        return {"ok": False, "why": "no IPython shell"}
    if not _Guard.hooked:
        shell.events.register("pre_run_cell", _pre_run_cell)
        shell.events.register("post_run_cell", _post_run_cell)
        threading.Thread.start = _thread_start(threading.Thread.start)
        threading.Thread._bootstrap_inner = _thread_bootstrap(threading.Thread._bootstrap_inner)
        from concurrent.futures import ThreadPoolExecutor

        ThreadPoolExecutor.submit = _pool_submit(ThreadPoolExecutor.submit)
        _Guard.hooked = True
    _Guard.armed = dict(settings)
    return {"ok": True}


def _pre_run_cell(*_info):
    settings, _Guard.armed = _Guard.armed, None
    if _Guard.step:  # a cell the guarded one runs (``%%capture``, ``%run``): still guarded
        _Guard.depth += 1
    elif settings is not None:
        guard_on(settings)
        _Guard.depth = 1


def _post_run_cell(*_info):
    if _Guard.step:
        _Guard.depth -= 1
        if _Guard.depth <= 0:
            _Guard.report = guard_off()


def guard_on(settings):
    """The guard is on for the calling context from now (see ``guard_off``)."""
    _Guard.root = _real(settings.get("root") or os.getcwd())
    key = (_Guard.root, settings.get("runtime_dir"), tuple(settings.get("open_dirs", ())),
           os.environ.get("HOME"), len(sys.path))
    if _Guard.folders_key != key:  # (worked out once: the interpreter's folders stay put)
        _Guard.folders = _folders(settings)
        _Guard.folders_key = key
    _Guard.code_dirs, _Guard.secret_dirs, _Guard.open_dirs = _Guard.folders
    _Guard.created = set()  # (``stops`` may hold some by code a step left running)
    _Guard.before = frozenset(sys._current_frames())
    _Guard.saved = _snapshot()
    _Guard.memory = int(settings.get("memory") or 0)
    _Guard.rlimit = _limit_memory(_Guard.memory) if _Guard.memory else None
    _Guard.dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    _Guard.serial += 1
    _Guard.token = _GUARDED.set(_Guard.serial)
    _Guard.step = _Guard.on = True


def guard_off():
    """The guard is off for the cell; what it stopped (threads it started stay guarded)."""
    try:
        _GUARDED.reset(_Guard.token)
    except (ValueError, RuntimeError):  # another context: leave it set there
        _GUARDED.set(0)
    alive = set(sys._current_frames())  # threads started without ``threading`` stay guarded
    raw = alive - _Guard.before - {_get_ident()} - set(threading._active)
    _Guard.threads = (_Guard.threads | raw) & alive
    _Guard.step = False
    sys.dont_write_bytecode = _Guard.dont_write
    if _Guard.rlimit is not None:
        _restore_memory(_Guard.rlimit)
        _Guard.rlimit = None
    _Guard.checking = True
    try:
        _compare(_Guard.saved)
    finally:
        _Guard.checking = False
        _Guard.saved = None
    # from now on only code the step left behind is guarded; the flag stays on, as callbacks
    # it scheduled carry the context variable
    stops, _Guard.stops = _Guard.stops, []
    return {"guarded": True, "stops": stops}


def guard_taken():
    """What the last guarded cell stopped (once), or that none was guarded."""
    found, _Guard.report = _Guard.report, None
    _Guard.armed = None  # (a cell that never started does not arm the next one)
    return found or {"guarded": False, "stops": []}


def _limit_memory(memory):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None
    limit = used + memory
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return soft, hard


def _restore_memory(saved):
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, saved)
    except (ValueError, OSError):
        pass
