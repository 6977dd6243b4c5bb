"""What a checkpoint holds of the namespace besides a fork: the values it keeps itself
(``_keep``), and a copy of a namespace of builtin data, made instead of a fork
(``_copy_plain``). A part of the probe (see ``changes.py``; used by
``checkpoints.py``).
"""

import gc
import io
import pickle
import types
import weakref

from .changes import Settings, _identity

_BY_REFERENCE = (types.FunctionType, type, types.BuiltinFunctionType, types.MethodType)
_PLAIN = frozenset({int, float, complex, bool, str, bytes, bytearray, list, tuple, dict, set,
                    frozenset, type(None)})


def _keep(value):
    """What a checkpoint holds of a value besides the fork's copy: nothing for plain data
    (the copy restores it), the object for functions and classes (restored by reference)
    and small handles, a weak reference otherwise (a deleted big object is freed)."""
    kind = type(value)
    if kind in _PLAIN:
        return None
    if isinstance(value, _BY_REFERENCE):
        return value
    try:
        return weakref.ref(value)
    except TypeError:
        return value


def _deref(kept):
    return kept() if isinstance(kept, weakref.ref) else kept


_LEAVES = frozenset({int, float, bool, str, bytes, type(None)})
_CONTAINERS = frozenset({list, tuple, set, frozenset})
_NESTED = _CONTAINERS | {dict}
_MAX_CONTAINERS = 5_000  # ~5 ms of walking (a fork costs ~25 ms of CPU per checkpoint)
_DATA = _LEAVES | _NESTED


class _PlainPickler(pickle.Pickler):
    """Pickles builtin data only. The pickler asks ``reducer_override`` about every object
    that is not an exact ``int float str bytes list tuple dict set frozenset`` (or None,
    True, False) before anything of the object's own is called; this refuses them all (a
    safety net: ``_copy_plain`` walked the values first)."""

    def reducer_override(self, obj):
        raise pickle.PicklingError(f"not builtin data: {type(obj).__name__}")


def _copy_plain(values, refs):
    """The namespace pickled now, as the fork's ``_dump`` would pickle it at restore, when
    every value is builtin data (numbers, text, bytes, and lists, tuples, dicts and sets of
    them: exact types, no subclasses) or kept by reference (functions, classes), in at most
    ``Settings.copy_max_bytes``; None otherwise (then a fork keeps the namespace). ``refs``:
    what the checkpoint holds of each value (``_keep``: None for builtin data).

    For such values both ways restore the same: pickling them runs none of the user's code
    (no ``__reduce__``, ``__getstate__`` or ``__eq__`` of theirs), the copy cannot change
    afterwards, and it is taken at one instant as a fork is: the pickling runs no Python
    code (the values were walked before, in Python; the pickle is written in memory; the
    garbage collector, which could run finalizers, is paused), so no other thread runs
    meanwhile. The copy costs a walk and a pickling of the data; a fork costs page tables,
    a copied page for every page the process writes until the next checkpoint, and tearing
    the fork down when it is dropped: for a small namespace, most of what change tracking
    costs per instruction."""
    limit = Settings.copy_max_bytes
    if limit <= 0:
        return None
    failed = {n: "restored by reference" for n, kept in refs.items()
              if kept is not None and isinstance(kept, _BY_REFERENCE)}
    good = {n: v for n, v in values.items() if n not in failed} if failed else values
    if not _plain_within(good.values(), limit):
        return None
    out = io.BytesIO()
    collecting = gc.isenabled()
    gc.disable()
    try:
        _PlainPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump((good, failed))
    except Exception:  # changed meanwhile by another thread, nested too deep
        return None
    finally:
        if collecting:
            gc.enable()
    return out.getvalue() if out.tell() <= limit else None


def _plain_within(values, limit):
    """Whether ``values`` are builtin data (see ``_copy_plain``) whose pickle is likely
    within ``limit`` bytes (8 per item plus the text): read only, stopping at the first
    other object or at the limit. The items of a long container are looked at in one
    ``map`` (their types), the containers among them walked in turn."""
    size = 0
    seen = {}  # identity -> a container (held: no other object takes its id meanwhile)
    stack = list(values)
    try:
        while stack:
            value = stack.pop()
            kind = type(value)
            size += 8
            if kind in _LEAVES:
                if kind is str or kind is bytes:
                    size += len(value)
            elif kind in _NESTED:
                key = _identity(value)  # (``id`` without its audit event)
                if key in seen:
                    continue
                seen[key] = value
                if len(seen) > _MAX_CONTAINERS:  # walking them would cost what a fork does
                    return False
                if kind is not dict and len(value) <= 32:
                    stack.extend(value)
                    continue
                for part in (value.keys(), value.values()) if kind is dict else (value,):
                    if len(part) <= 32:
                        stack.extend(part)
                        continue
                    size += 8 * len(part)
                    if size > limit:
                        return False
                    kinds = set(map(type, part))
                    if not kinds <= _DATA:
                        return False
                    if str in kinds or bytes in kinds:
                        size += sum([len(x) for x in part if type(x) is str or type(x) is bytes])
                    if kinds & _NESTED:
                        stack.extend([x for x in part if type(x) in _NESTED])
            else:
                return False
            if size > limit:
                return False
    except RuntimeError:  # changed by another thread while walked
        return False
    return True
