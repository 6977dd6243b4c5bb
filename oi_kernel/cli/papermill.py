"""papermill support: ``papermill in.ipynb out.ipynb -k open-interpreter -p NAME VALUE``.

papermill writes ``-p`` parameters as a cell in the kernel's language, through a translator
it looks up by kernel name, then by language. The Open Interpreter kernel's language is
markdown (its cells are instructions), so this module registers a translator for the
kernel name: Python assignments under ``%%python``, which the kernel runs in its Python
kernel without the model. papermill has no entry point for translators; it imports its
engines' entry points (group ``papermill.engine``) at start-up, so ``OIEngine``, the
ordinary nbclient engine under the name ``open-interpreter``, is the hook that registers it.

Only papermill imports this module.
"""

from __future__ import annotations

from typing import Any

from papermill.engines import NBClientEngine
from papermill.translators import PythonTranslator, papermill_translators

KERNEL_NAME = "open-interpreter"
DIRECT_PYTHON = "%%python"


class OITranslator(PythonTranslator):
    """Parameters for the Open Interpreter kernel: a ``%%python`` cell of assignments."""

    @classmethod
    def codify(cls, parameters: dict[str, Any], comment: str = "Parameters") -> str:
        return f"{DIRECT_PYTHON}\n{super().codify(parameters, comment)}"

    @classmethod
    def inspect(cls, parameters_cell: Any) -> list[Any]:
        """The parameters of a ``%%python`` cell (``papermill --help-notebook``); a cell of
        commands or instructions has none."""
        source = parameters_cell["source"]
        first, _, body = source.lstrip().partition("\n")
        if first.strip() != DIRECT_PYTHON:
            return []
        return super().inspect({**parameters_cell, "source": body})


class OIEngine(NBClientEngine):
    """papermill's nbclient engine, registered as ``open-interpreter`` (see the module
    docstring); ``--engine open-interpreter`` is the same as the default engine."""


papermill_translators.register(KERNEL_NAME, OITranslator)
