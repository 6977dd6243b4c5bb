"""Plain immutable values for events (``core.recorded``): a published event holds nothing a
subscriber could change under the others.

``freeze(value)`` turns the containers of a value into immutable ones, all the way down:
a ``dict`` into a ``FrozenDict``, a ``list`` or ``tuple`` into a tuple, a ``set`` into a
``frozenset``. A ``FrozenDict`` is a ``dict`` that refuses every change and can be hashed,
so ``json.dumps`` writes it as an object and code that reads a dict reads it unchanged; a
tuple is written as a JSON array. ``thaw`` gives plain, mutable copies back (a reader that
wants to change what it got).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

__all__ = ["FrozenDict", "freeze", "thaw"]


class FrozenDict(dict):  # type: ignore[type-arg]
    """A read-only ``dict`` (its values frozen too): any change raises ``TypeError``."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("an event's values are read-only: copy it first (dict(value))")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset((k, _hashable(v)) for k, v in self.items()))

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def freeze(value: Any) -> Any:
    """``value`` with its containers immutable, all the way down (other values as they are)."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable copy of a frozen ``value`` (dicts and lists, all the way down)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return [thaw(v) for v in value]
    return value
