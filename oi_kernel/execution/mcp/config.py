"""Where MCP servers are configured, and what one entry means.

The format is the one Claude Desktop, Jupyter AI and Notebook Intelligence use::

    {"mcpServers": {
        "prices": {"command": "python", "args": ["prices_server.py"], "env": {"KEY": "..."}},
        "docs":   {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "..."}}}}

plus optional per-server keys of ours: ``tools`` (a list: offer only these), ``timeout``
(seconds per call), ``connect_timeout``, ``disabled``. Files are read from, highest
precedence first (a server name found earlier wins): ``OI_MCP_CONFIG`` (a path),
``c.Tools.mcp_config`` (a path), and ``mcp.json`` in each Jupyter config directory.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oi_kernel.errors import ConfigError

MCP_CONFIG_ENV = "OI_MCP_CONFIG"
CONFIG_FILE = "mcp.json"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")


@dataclass
class ServerSpec:
    """One configured server (``command`` for stdio, ``url`` for streamable HTTP)."""

    name: str
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    tools: list[str] | None = None  # an allowlist; None: every tool
    call_timeout: float = 60.0
    connect_timeout: float = 30.0
    source: str = ""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


def config_paths(configured: str = "") -> list[Path]:
    """The files to read, highest precedence first (those that exist)."""
    paths: list[Path] = []
    for value in (os.environ.get(MCP_CONFIG_ENV, ""), configured):
        if value.strip():
            path = Path(value.strip()).expanduser()
            if not path.is_file():
                source = MCP_CONFIG_ENV if value is not configured else "c.Tools.mcp_config"
                raise ConfigError(f"{source} points at {path}, which is not a file. Fix the "
                                  "path, or unset it.")
            paths.append(path)
    from jupyter_core.paths import jupyter_config_path

    paths += [p for p in (Path(d) / CONFIG_FILE for d in jupyter_config_path()) if p.is_file()]
    return paths


def load_servers(configured: str = "", defaults: dict[str, float] | None = None
                 ) -> list[ServerSpec]:
    """Every configured server, in file order; ConfigError (naming file and key) when a
    file or an entry is malformed."""
    servers: dict[str, ServerSpec] = {}
    for path in config_paths(configured):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"MCP config {path} could not be read: {exc}") from None
        for spec in parse_config(data, str(path), defaults or {}):
            servers.setdefault(spec.name, spec)
    return list(servers.values())


def parse_config(data: Any, source: str, defaults: dict[str, float]) -> list[ServerSpec]:
    """The servers of one parsed file (``mcpServers``; ``servers`` as VS Code writes it)."""
    if not isinstance(data, dict):
        raise ConfigError(f"MCP config {source}: expected a JSON object with \"mcpServers\".")
    table = data.get("mcpServers", data.get("servers"))
    if not isinstance(table, dict):
        raise ConfigError(f"MCP config {source}: no \"mcpServers\" object. The format is "
                          '{"mcpServers": {"NAME": {"command": "...", "args": [...]}}}.')
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict) or entry.get("disabled"):
            if isinstance(entry, dict):
                continue
            raise ConfigError(f"MCP config {source}: server {name!r} must be an object.")
        out.append(_spec(str(name), entry, source, defaults))
    return out


def _spec(name: str, entry: dict[str, Any], source: str, defaults: dict[str, float]
          ) -> ServerSpec:
    where = f"MCP config {source}, server {name!r}"
    if not _NAME_RE.match(name):
        raise ConfigError(f"{where}: a name is letters, digits, space, '.', '_' or '-'.")
    spec = ServerSpec(name=name, source=source,
                      call_timeout=float(defaults.get("call_timeout", 60.0)),
                      connect_timeout=float(defaults.get("connect_timeout", 30.0)))
    if "url" in entry:
        spec.url = _text(entry["url"], where, "url")
        if not spec.url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: \"url\" must start with http:// or https://.")
        spec.headers = _str_map(entry.get("headers", {}), where, "headers")
    elif "command" in entry:
        spec.command = _text(entry["command"], where, "command")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            raise ConfigError(f"{where}: \"args\" must be a list of strings.")
        spec.args = [str(a) for a in args]
        spec.env = _str_map(entry.get("env", {}), where, "env")
        spec.cwd = str(entry.get("cwd", "") or "")
    else:
        raise ConfigError(f"{where}: needs \"command\" (a stdio server) or \"url\" (streamable "
                          "HTTP).")
    tools = entry.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ConfigError(f"{where}: \"tools\" must be a list of tool names.")
        spec.tools = tools
    for key, attr in (("timeout", "call_timeout"), ("connect_timeout", "connect_timeout")):
        if key in entry:
            value = entry[key]
            if not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{where}: \"{key}\" must be a positive number of seconds.")
            setattr(spec, attr, float(value))
    return spec


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: \"{key}\" must be a non-empty string.")
    return value.strip()


def _str_map(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: \"{key}\" must be an object of strings.")
    return {str(k): str(v) for k, v in value.items()}
