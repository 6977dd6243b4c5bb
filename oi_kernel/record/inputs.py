"""The workspace files a session read: recorded by the export, needed by ``verify``.

The probe reports, with each step's changes, the files under the working directory that the
step read before the session wrote them (``reads``: path, size, sha256). ``Inputs`` collects
them while the export walks the log: the first step that read each one (numbered as the
exported notebook's code cells), leaving out files an earlier step created or changed (the
session's own outputs). The export keeps them in ``metadata.oi_kernel.inputs``.

``stage_inputs`` prepares ``verify``'s working copy before anything runs: each input is taken
from the copy of the notebook's folder, else from ``--inputs DIR``; one that is missing, or
whose content is not what the session read, is named with the step that read it.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from oi_kernel.errors import OIError


class InputsError(OIError):
    """Verify cannot start: an input the session read is missing or not the same."""


@dataclass
class Inputs:
    """The inputs of a session, in the order the export meets them."""

    found: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> its record
    made: set[str] = field(default_factory=set)  # paths a step created or changed

    def add(self, changes: dict[str, Any] | None, step: int | None) -> None:
        """One executed step's ``changes``; ``step``: its exported cell's number (None when
        the step is not in the notebook: it still makes the files it wrote outputs)."""
        changes = changes or {}
        if step is not None:
            for read in changes.get("reads") or []:
                path = str(read.get("path") or "")
                if _safe(path) and path not in self.found and path not in self.made:
                    self.found[path] = {"path": path, "size": read.get("size"),
                                        "sha256": read.get("sha256"), "step": step}
        for f in changes.get("files") or []:
            if f.get("change") in ("created", "modified"):
                self.made.add(str(f.get("path") or ""))

    def as_list(self) -> list[dict[str, Any]]:
        return list(self.found.values())


def _safe(path: str) -> bool:
    """A relative path inside the folder (no ``..``, not absolute)."""
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts


def recorded_inputs(nb: Any) -> list[dict[str, Any]]:
    """The inputs an exported notebook names (``[]`` for one without any)."""
    inputs = (nb.metadata.get("oi_kernel") or {}).get("inputs") or []
    return [i for i in inputs if isinstance(i, dict) and _safe(str(i.get("path") or ""))]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _problem(item: dict[str, Any], there: Path) -> str:
    """Why the file at ``there`` is not the input the session read ("" when it is)."""
    size, sha = item.get("size"), item.get("sha256")
    if not there.is_file():
        return "missing"
    if size is not None and there.stat().st_size != size:
        return f"changed: {there.stat().st_size:,} bytes, the session read {size:,}"
    if sha and file_sha256(there) != sha:
        return f"changed: its sha256 is not the {sha[:12]}… the session read"
    return ""


def stage_inputs(nb: Any, workdir: Path, inputs_dir: Path | None, notebook: Path) -> list[str]:
    """Make every recorded input of ``nb`` present in ``workdir`` (the copy verify runs in),
    copying from ``inputs_dir`` what the notebook's folder lacks; a line per input staged.
    Raises ``InputsError`` naming each input that is missing or not what was read."""
    staged, problems = [], []
    for item in recorded_inputs(nb):
        path, step = item["path"], item.get("step")
        target = workdir / path
        why = _problem(item, target)
        if why and inputs_dir is not None and (inputs_dir / path).is_file():
            other = _problem(item, inputs_dir / path)
            if not other:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(inputs_dir / path, target)
                staged.append(f"{path} (from {inputs_dir})")
                continue
            why = other + f" (in {inputs_dir})"
        if why:
            where = f", read in step {step}" if step is not None else ""
            problems.append(f"  needs {path}{where}: {why}")
        else:
            staged.append(path)
    if problems:
        looked = f"beside the notebook ({notebook.resolve().parent})" + (
            f" or in {inputs_dir}" if inputs_dir is not None else "")
        raise InputsError(
            "Cannot verify: the notebook needs the files the session read, as it read them.\n"
            + "\n".join(problems) + f"\nLooked {looked}. Put them there (same relative paths), "
            "or pass --inputs DIR (inputs_dir=) with the folder that holds them. Nothing was run."
        )
    return staged
