"""Pins: the version of each MCP tool a person approved, kept per user across sessions.

One JSON file (``$OI_MCP_PINS``, else ``c.Tools.pin_file``, else ``mcp-pins.json`` in the
Jupyter data directory's ``oi_kernel`` folder)::

    {"version": 1, "servers": {"prices": {"tools": {"add": {
        "sha256": "...", "description": "...", "schema": {...}, "annotations": {...},
        "title": "", "pinned_at": "2026-11-26T23:50:02Z", "by": "you"}}}}}

``by`` is ``you`` (a person approved a call of that version) or ``auto-run`` (the first
call ran without asking: auto-run, Run all, a read-only tool under ``risky``). Several
sessions share the file: every change is a read-modify-write under an exclusive lock of a
sibling ``.lock`` file, written to a temporary file and renamed over the old one, so a
reader never sees half a file and no session's pin is lost. A file that cannot be read
is moved aside (``.corrupt-<time>``) and said once; pins then start empty (every tool is
new again: fail closed).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oi_kernel.execution.mcp.trust import ToolVersion

PINS_ENV = "OI_MCP_PINS"
PINS_FILE = "mcp-pins.json"


def default_path(configured: str = "") -> Path:
    value = os.environ.get(PINS_ENV, "").strip() or configured.strip()
    if value:
        return Path(value).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "oi_kernel" / PINS_FILE


@dataclass
class Pin:
    version: ToolVersion
    sha256: str
    pinned_at: str  # ISO 8601, UTC
    by: str  # "you" | "auto-run"

    @property
    def date(self) -> str:
        return self.pinned_at[:10]

    @property
    def approved(self) -> bool:
        return self.by == "you"

    def since(self) -> str:
        """``since you approved it on 2026-11-26`` (or how it was pinned)."""
        if self.approved:
            return f"since you approved it on {self.date}"
        return f"since it was first called (without asking) on {self.date}"


class PinStore:
    """The pin file of this user (looked at again at most twice a second: another session
    may have pinned; written at once)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._data: dict[str, Any] = {}
        self._stamp: tuple[float, int] | None = None
        self._checked = 0.0  # time.monotonic() of the last stat
        self._parsed_from: dict[str, Any] | None = None
        self._parsed: dict[tuple[str, str], Pin | None] = {}
        self.problems: list[str] = []  # said once by whoever shows notices

    # ------------------------------------------------------------ reading
    def _read_file(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self.problems.append(f"The MCP pin file {self.path} could not be read ({exc}); "
                                 "every tool counts as new until it can.")
            return {}
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("servers", {}), dict):
                raise ValueError("not an object with \"servers\"")
        except ValueError as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)
            self.problems.append(f"The MCP pin file {self.path} was not valid JSON ({exc}); it "
                                 f"was moved to {aside.name} and pins start again (every tool "
                                 "counts as new).")
            return {}
        return data

    def _fresh(self) -> dict[str, Any]:
        now = time.monotonic()
        if self._stamp is not None and now - self._checked < 0.5:
            return self._data
        self._checked = now
        try:
            st = self.path.stat()
            stamp: tuple[float, int] | None = (st.st_mtime, st.st_size)
        except OSError:
            stamp = None
        if stamp != self._stamp or not self._data:
            self._data = self._read_file()
            self._stamp = stamp
        return self._data

    def get(self, server: str, tool: str) -> Pin | None:
        data = self._fresh()
        if self._parsed_from is not data:
            self._parsed_from, self._parsed = data, {}
        if (server, tool) not in self._parsed:
            self._parsed[(server, tool)] = self._parse(data, server, tool)
        return self._parsed[(server, tool)]

    @staticmethod
    def _parse(data: dict[str, Any], server: str, tool: str) -> Pin | None:
        entry = ((data.get("servers", {}).get(server, {}) or {}).get("tools", {}) or {}).get(tool)
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            return None
        return Pin(ToolVersion.from_json(entry), entry["sha256"],
                   str(entry.get("pinned_at", "")), str(entry.get("by", "you")))

    def server_pins(self, server: str) -> dict[str, Pin]:
        tools = (self._fresh().get("servers", {}).get(server, {}) or {}).get("tools", {})
        return {name: pin for name in tools if (pin := self.get(server, name)) is not None}

    # ------------------------------------------------------------ writing
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # (Windows: the atomic rename still keeps the file whole)
                pass
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def pin(self, server: str, tool: str, version: ToolVersion, by: str) -> Pin:
        """Record ``version`` as the pinned one of ``server``'s ``tool`` (atomically)."""
        entry = {**version.canonical(), "sha256": version.sha256,
                 "pinned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": by}
        with self._locked():
            data = self._read_file()  # the newest: another session may have written
            data.setdefault("version", 1)
            servers = data.setdefault("servers", {})
            servers.setdefault(server, {}).setdefault("tools", {})[tool] = entry
            fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp",
                                       dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=1, ensure_ascii=False, sort_keys=True)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            self._data, self._stamp = data, None
        return Pin(version, entry["sha256"], entry["pinned_at"], by)
