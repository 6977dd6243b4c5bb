"""``interpreter.states``: the session's named states from Python (``%state`` and
``%states`` in the kernel; ``session.states`` does the work)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from oi_kernel.api.commands import said

if TYPE_CHECKING:
    from oi_kernel.session.commands import CommandContext


class States:
    """Named states of an ``Interpreter``: ``save``, ``restore`` and ``drop`` return what
    the kernel's ``%state`` command says (Markdown) and raise ``OIError`` as it refuses
    (an unknown name lists the known ones; a workspace over the budget says its size and
    the setting to raise). Iterating gives the states oldest first (``name``, ``parent``,
    ``instruction``, ``info`` with the sizes); ``current`` is the one the session is on."""

    def __init__(self, interpreter: Any) -> None:
        self._it = interpreter

    def save(self, name: str) -> str:
        """Keep the variables and the workspace files as state ``name``."""
        return self._command(f"state save {name}")

    def restore(self, name: str) -> str:
        """Go back to state ``name``: variables and files; newer states stay. A state whose
        kernel was lost is rebuilt from its recorded steps (asking ``approve`` for flagged
        ones). Returns what changed, in words."""
        return self._command(f"state restore {name}")

    def drop(self, name: str) -> str:
        return self._command(f"state drop {name}")

    @property
    def current(self) -> str | None:
        return self._states().current

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._states().states.values()))

    def __len__(self) -> int:
        return len(self._states().states)

    def _states(self) -> Any:
        from oi_kernel.session.states import states_of

        return states_of(self._it.session)

    def _command(self, line: str) -> str:
        """Run a line command as the kernel's ``%`` commands do; what it said."""
        from oi_kernel.session.commands import run_command

        def step(ctx: CommandContext) -> Any:
            self._states()  # (registers the state commands)
            return run_command(ctx, line)

        return said(self._it, step)
