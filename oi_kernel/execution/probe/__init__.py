"""The probe: what a step changed, checkpoints to roll it back and the runtime guard, run
where the code runs (the child kernel, or the user's own process for ``%%oi``).

Its parts are modules of this package, standard library only, each importing what it uses
from the parts before it with relative imports (``from .changes import Settings``):

- ``changes``: settings, the scan of the working directory, ``begin``/``end`` (the change summary)
- ``guard`` and ``guard_cell``: the runtime guard (audit events; the cell around a guarded step)
- ``watch``: the scan kept current by inotify, the audit hook that saves files' pre-images
- ``values``: what a checkpoint keeps of the namespace itself, besides a fork
- ``checkpoints``: checkpoints and restore, and the entry point ``call``
- ``isolate``, ``overlay``, ``scratch`` and ``preview``: a step run in a disposable copy
  (a fork in private namespaces over copy-on-write overlays, or a scratch copy under
  Landlock) and what it would change (``core.preview``)

Where the code runs there may be no ``oi_kernel`` to import (a sandboxed child, a remote
gateway kernel), so the parts travel as source: ``install`` makes each one a module
``_oi_probe.<part>`` of a package ``_oi_probe`` (their relative imports resolve there, as they
do here) and gives the package every part's names, so the probe is one unit
(``sys.modules['_oi_probe'].call(...)``) and nothing is added to the user's namespace. ``BOOT``
is that installation as one expression, which ``ChildRunner`` sends to a child that lacks it;
``local_probe`` installs it in this process. A process holds one probe whatever the front door.
"""

from __future__ import annotations

import inspect
import sys
import types
from pathlib import Path

_HERE = Path(__file__).parent
# in order: each imports only from those before it
PARTS = ("changes", "guard", "guard_cell", "watch", "values", "checkpoints", "isolate",
         "overlay", "scratch", "preview")
MODULE = "_oi_probe"


def install(parts, name="_oi_probe"):
    """The probe as ``sys.modules[name]``, installed from ``parts`` (``(part, source)`` pairs
    in order) unless it is there already. Standard library only: its source is sent to the
    child with the parts'."""
    import sys
    import types

    top = sys.modules.get(name)
    if top is not None:
        return top
    top = types.ModuleType(name, "The oi_kernel probe (installed by oi_kernel.execution.probe).")
    top.__path__ = []
    modules = {}
    try:
        for part, source in parts:
            module = modules[part] = types.ModuleType(f"{name}.{part}")
            module.__package__ = name
            sys.modules[module.__name__] = module
            exec(compile(source, f"<oi-probe/{part}>", "exec"), module.__dict__)  # noqa: S102
            top.__dict__.update((key, value) for key, value in module.__dict__.items()
                                if not key.startswith("__"))
    except BaseException:
        for part in modules:
            sys.modules.pop(f"{name}.{part}", None)
        raise
    sys.modules[name] = top
    return top


SOURCES = tuple((part, (_HERE / f"{part}.py").read_text(encoding="utf-8")) for part in PARTS)

# Run in the child: installs the probe once (an expression: it binds no user variable).
BOOT = (f"exec({inspect.getsource(install) + f'install({SOURCES!r}, {MODULE!r})'!r}, "
        "{'__name__': '_oi_probe_boot'})")


def local_probe() -> types.ModuleType:
    """The probe in this process (installed on first use)."""
    return sys.modules.get(MODULE) or install(SOURCES, MODULE)
