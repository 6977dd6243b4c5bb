"""Loads the probe (``probe.py``, ``probe_guard.py``, ``probe_guard_cell.py``,
``probe_watch.py``, ``probe_copy.py``, ``probe_checkpoints.py``, ``probe_states.py``) as one
private module.

The same source runs in the child kernel (sent by ``ChildRunner`` as a silent execution) and
in the user's own process for ``%%oi`` (``local_probe``): in both it becomes
``sys.modules['_oi_probe']``, so nothing is added to the user's namespace, and a process
holds one probe whatever the front door.

The parts are modules that import from each other; joined, they are one namespace, so those
imports are left out: the child needs no ``oi_kernel`` (a sandboxed or remote child has none).
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

_HERE = Path(__file__).parent
# each imports only from those before it
PARTS = ("probe", "probe_guard", "probe_guard_cell", "probe_watch", "probe_copy",
         "probe_checkpoints", "probe_states")
# one import from a part, on one line or in parentheses
_PART_IMPORT = re.compile(
    rf"^from oi_kernel\.execution\.(?:{'|'.join(PARTS)}) import (?:\([^)]*\)|[^\n]*)\n",
    re.MULTILINE)
SOURCE = "\n\n".join(_PART_IMPORT.sub("", (_HERE / f"{name}.py").read_text(encoding="utf-8"))
                     for name in PARTS)
MODULE = "_oi_probe"

# Run in the child: installs the probe once (an expression: it binds no user variable).
BOOT = (
    f"(lambda sys, types: {MODULE!r} in sys.modules or (sys.modules.__setitem__("
    f"{MODULE!r}, types.ModuleType({MODULE!r})), exec(compile({SOURCE!r}, '<oi-probe>', "
    f"'exec'), sys.modules[{MODULE!r}].__dict__)))(__import__('sys'), __import__('types'))"
)


def local_probe() -> types.ModuleType:
    """The probe in this process (installed on first use)."""
    module = sys.modules.get(MODULE)
    if module is None:
        module = types.ModuleType(MODULE)
        sys.modules[MODULE] = module
        exec(compile(SOURCE, "<oi-probe>", "exec"), module.__dict__)  # noqa: S102
    return module
