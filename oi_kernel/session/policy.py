"""The administrator's policy: floors and limits that users cannot lower.

An administrator (of a JupyterHub, say) puts ``oi_kernel_policy.json`` in a Jupyter
config directory that is not the user's own: one named by ``JUPYTER_CONFIG_PATH``,
``{sys.prefix}/etc/jupyter``, or a system one such as ``/etc/jupyter`` (``jupyter --paths``
lists them; ``~/.jupyter`` and ``JUPYTER_CONFIG_DIR`` are the user's and never hold a
policy). Every file found applies, and where two disagree the stricter value wins::

    {
      "approval": "risky",                 minimum (core.approval_modes): four-eyes-all > ... > never
      "allowed_models": ["gpt-4o*", "openai/*"],
      "sandbox": "required",
      "sandbox_grants": "denied",          no paths beyond the workspace (read_paths, ...)
      "max_cost_per_session": 5,           USD
      "max_tokens_per_session": 200000,
      "max_steps": 8,
      "log_dir": "/var/log/oi_kernel",     the session logs go there, always
      "mcp": {"allowed": ["github"], "denied": ["shell*"]},
      "gateway_url": "http://gateway.internal:8888",
      "untrusted_content": "ask",          steps that follow text from outside (a file, a
                                           web page, an MCP result) ask, Run all or not
      "known_safe_denied": ["shutil.copy*", ".to_csv"],  never known safe: such
                                           blocks ask under `risky` (docs/security.md)
      "preview": "flagged",                every step with a risk flag is previewed in a
                                           disposable copy before its card shows
      "comment": "anything: ignored"
    }

A file that cannot be read, an unknown key or a bad value puts the session in its
strictest mode (``STRICTEST``) and every message names the file and the line. This module
reads and merges the files; ``session.policy_rules`` applies the result to a session.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from oi_kernel.core import approval_modes

FILE_NAME = "oi_kernel_policy.json"
APPROVAL_RANK = approval_modes.RANK
APPROVAL_ORDER = approval_modes.ORDER
KEYS = ("approval", "allowed_models", "sandbox", "sandbox_grants", "max_cost_per_session",
        "max_tokens_per_session", "max_steps", "log_dir", "mcp", "gateway_url",
        "untrusted_content", "known_safe_denied", "preview", "comment")
STRICTEST = ("every code block asks for approval, the sandbox is required with no paths "
             "granted beyond the workspace, no MCP server is "
             "allowed, at most one LLM call per instruction, and no instruction is sent to a "
             "model")


def policy_dirs() -> list[Path]:
    """The Jupyter config directories a policy is read from, highest precedence first:
    ``JUPYTER_CONFIG_PATH``, then the environment's and the system's. The user's own
    (``jupyter_config_dir()``) is left out unless it is also one of those."""
    from jupyter_core.paths import ENV_CONFIG_PATH, SYSTEM_CONFIG_PATH

    env_paths = [p for p in os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    system = [*ENV_CONFIG_PATH, *SYSTEM_CONFIG_PATH]
    own = os.path.realpath(os.environ.get("JUPYTER_CONFIG_DIR", "").strip()
                           or os.path.expanduser("~/.jupyter"))
    dirs: list[Path] = []
    for path in [*env_paths, *system]:
        real = os.path.realpath(path)
        if real == own and path not in system:
            continue
        if Path(real) not in dirs:
            dirs.append(Path(real))
    return dirs


@dataclass
class Policy:
    """The merged policy of every file found (empty when there is none)."""

    files: list[Path] = field(default_factory=list)
    approval: str = "never"  # the minimum
    allowed_models: list[tuple[Path, list[str]]] = field(default_factory=list)
    sandbox: bool = False
    sandbox_grants: bool = True  # False: the sandbox sees no granted paths
    max_cost_per_session: float = 0.0  # 0: no limit
    max_tokens_per_session: int = 0
    max_steps: int = 0
    log_dir: str = ""
    gateway_url: str = ""
    mcp_allowed: list[tuple[Path, list[str]]] = field(default_factory=list)
    mcp_denied: list[str] = field(default_factory=list)
    untrusted_ask: bool = False  # steps that follow outside content always ask
    known_safe_denied: list[str] = field(default_factory=list)  # never known safe (globs)
    preview: str = ""  # "flagged": risky steps are previewed first (core.preview)
    problems: list[str] = field(default_factory=list)  # "FILE, line N: what is wrong"
    sources: dict[str, Path] = field(default_factory=dict)  # rule -> the file that set it

    @property
    def active(self) -> bool:
        return bool(self.files)

    @property
    def strict(self) -> bool:
        """A file could not be read fully: the strictest mode."""
        return bool(self.problems)

    def where(self, key: str = "") -> str:
        """"the administrator's policy (FILE)" for the file that set ``key``."""
        path = self.sources.get(key) or (self.files[0] if self.files else None)
        return f"the administrator's policy ({path})" if path else "the administrator's policy"

    def model_allowed(self, model: str) -> bool:
        if self.strict:
            return False
        return all(any(fnmatchcase(model, p) for p in globs) for _, globs in self.allowed_models)

    def allowed_model_patterns(self) -> list[str]:
        return [p for _, globs in self.allowed_models for p in globs]

    def mcp_server_allowed(self, name: str) -> bool:
        """Whether an MCP server called ``name`` may be started (``session.tools`` leaves
        the others out and ``%mcp`` says why)."""
        if self.strict or any(fnmatchcase(name, p) for p in self.mcp_denied):
            return False
        return all(any(fnmatchcase(name, p) for p in globs) for _, globs in self.mcp_allowed)

    def strict_message(self) -> str:
        problems = "\n".join(f"- {p}" for p in self.problems)
        return (f"The administrator's policy could not be read fully:\n{problems}\nUntil it is "
                f"fixed this session runs in its strictest mode: {STRICTEST}. Ask your "
                "administrator to fix the file.")

    def rules(self) -> list[str]:
        """The rules in force, in words."""
        rules = []
        if self.approval != "never":
            rules.append(f"approval at least `{self.approval}`")
        if self.allowed_models:
            rules.append("models: " + ", ".join(f"`{p}`" for p in self.allowed_model_patterns())
                         if self.allowed_model_patterns() else "no model allowed")
        if self.sandbox:
            rules.append("sandbox required" + (" (the gateway's job)" if self.gateway_url else ""))
        if not self.sandbox_grants:
            rules.append("no sandbox grants (nothing outside the workspace)")
        if self.max_cost_per_session:
            rules.append(f"at most ${self.max_cost_per_session:g} per session")
        if self.max_tokens_per_session:
            rules.append(f"at most {self.max_tokens_per_session:,} tokens per session")
        if self.max_steps:
            rules.append(f"at most {self.max_steps} LLM calls per instruction")
        if self.log_dir:
            rules.append(f"session logs in `{self.log_dir}`")
        if self.gateway_url:
            rules.append(f"child kernels on the gateway `{self.gateway_url}`")
        if self.untrusted_ask:
            rules.append("steps that follow content from outside (files, web, MCP) ask")
        if self.known_safe_denied:
            rules.append("never known safe: " + ", ".join(f"`{p}`" for p in
                                                         self.known_safe_denied))
        if self.preview == "flagged":
            rules.append("steps with a risk flag are previewed before they are asked about")
        if self.mcp_allowed or self.mcp_denied:
            allowed = [p for _, g in self.mcp_allowed for p in g]
            parts = ([f"allowed {', '.join(allowed) or 'none'}"] if self.mcp_allowed else [])
            parts += [f"denied {', '.join(self.mcp_denied)}"] if self.mcp_denied else []
            rules.append("MCP servers " + "; ".join(parts))
        return rules


def load_policy(dirs: list[Path] | None = None) -> Policy:
    """Read and merge every ``oi_kernel_policy.json`` in ``dirs`` (default ``policy_dirs()``)."""
    policy = Policy()
    for directory in policy_dirs() if dirs is None else dirs:
        path = Path(directory) / FILE_NAME
        if not path.is_file():
            continue
        policy.files.append(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            policy.problems.append(f"{path}: cannot be read ({exc})")
            continue
        _merge(policy, path, text)
    if policy.strict:
        _make_strictest(policy)
    return policy


def _make_strictest(policy: Policy) -> None:
    policy.approval = "always"
    policy.allowed_models = [(policy.files[0], [])]
    policy.sandbox = True
    policy.sandbox_grants = False
    policy.max_steps = 1
    policy.mcp_denied = ["*"]
    policy.untrusted_ask = True


# ----------------------------------------------------------------------------- one file
class _Bad(Exception):
    """A bad value; the message says what is expected."""


def _merge(policy: Policy, path: Path, text: str) -> None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        policy.problems.append(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})")
        return
    if not isinstance(data, dict):
        policy.problems.append(f"{path}, line 1: must be a JSON object of rules")
        return
    for key, value in data.items():
        line = _line_of(text, key)
        if key not in KEYS:
            from difflib import get_close_matches

            close = get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            policy.problems.append(f"{path}, line {line}: unknown key '{key}'{hint}; known "
                                   f"keys: {', '.join(KEYS)}")
            continue
        try:
            _apply_rule(policy, path, key, value)
        except _Bad as exc:
            policy.problems.append(f"{path}, line {line}: '{key}' {exc}")


def _line_of(text: str, key: str) -> int:
    match = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def _apply_rule(policy: Policy, path: Path, key: str, value: Any) -> None:
    if key == "comment":
        return
    if key == "approval":
        if value not in APPROVAL_RANK:
            raise _Bad(f"must be one of {', '.join(approval_modes.NAMES)}; got {value!r}")
        if APPROVAL_RANK[value] > APPROVAL_RANK[policy.approval]:
            policy.approval = value
            policy.sources[key] = path
    elif key == "allowed_models":
        policy.allowed_models.append((path, _globs(value, "model names", "gpt-4o*")))
        policy.sources.setdefault(key, path)
    elif key == "sandbox":
        if value not in ("required", "optional", True, False):
            raise _Bad(f'must be "required" (or "optional"); got {value!r}')
        if value in ("required", True) and not policy.sandbox:
            policy.sandbox = True
            policy.sources[key] = path
    elif key == "sandbox_grants":
        if value not in ("denied", "allowed", True, False):
            raise _Bad(f'must be "denied" (or "allowed"); got {value!r}')
        if value in ("denied", False) and policy.sandbox_grants:
            policy.sandbox_grants = False
            policy.sources[key] = path
    elif key in ("max_cost_per_session", "max_tokens_per_session", "max_steps"):
        _limit(policy, path, key, value)
    elif key in ("log_dir", "gateway_url"):
        _single(policy, path, key, _text(key, value))
    elif key == "mcp":
        _mcp(policy, path, value)
    elif key == "untrusted_content":
        if value not in ("ask", "approval"):
            raise _Bad('must be "ask" (steps that follow content from outside the user ask, '
                       'whatever the approval mode) or "approval" (the approval mode decides); '
                       f"got {value!r}")
        if value == "ask" and not policy.untrusted_ask:
            policy.untrusted_ask = True
            policy.sources[key] = path
    elif key == "preview":
        if value not in ("flagged", "on-request"):
            raise _Bad('must be "flagged" (every step with a risk flag is previewed before it '
                       f'is asked about) or "on-request"; got {value!r}')
        if value == "flagged":
            policy.preview = value
            policy.sources[key] = path
    elif key == "known_safe_denied":
        names = _globs(value, "qualified names (`.name` for a method)", "shutil.copy*")
        policy.known_safe_denied += [n for n in names if n not in policy.known_safe_denied]
        policy.sources[key] = path


def _globs(value: Any, what: str, example: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _Bad(f'must be a list of {what} or patterns, e.g. ["{example}"]; got {value!r}')
    return [v.strip() for v in value]


def _limit(policy: Policy, path: Path, key: str, value: Any) -> None:
    whole = key != "max_cost_per_session"
    ok = isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)
    if not ok or value <= 0 or value != value:
        kind = "a whole number" if whole else "a number"
        raise _Bad(f"must be {kind} above 0; got {value!r}")
    current = getattr(policy, key)
    if not current or value < current:
        setattr(policy, key, value if whole else float(value))
        policy.sources[key] = path


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"must be a non-empty string; got {value!r}")
    value = value.strip()
    if key == "log_dir" and not os.path.isabs(os.path.expandvars(value)):
        raise _Bad(f"must be an absolute path; got {value!r}")
    if key == "gateway_url":
        from oi_kernel.execution.gateway_options import url_problem

        if problem := url_problem(value):
            raise _Bad(problem[:1].lower() + problem[1:])
        return value.rstrip("/")
    return os.path.expandvars(value)


def _single(policy: Policy, path: Path, key: str, value: str) -> None:
    """A rule with one value: files that disagree are a problem (a later, more system-wide
    file's value is used)."""
    current = getattr(policy, key)
    if current and current != value:
        policy.problems.append(f"{path}: '{key}' is {value!r} here but {current!r} in "
                               f"{policy.sources[key]}; the policies must agree")
    setattr(policy, key, value)
    policy.sources[key] = path


def _mcp(policy: Policy, path: Path, value: Any) -> None:
    if not isinstance(value, dict) or set(value) - {"allowed", "denied"}:
        raise _Bad('must be an object with "allowed" and/or "denied" lists of server names '
                   f"or patterns; got {value!r}")
    if "allowed" in value:
        policy.mcp_allowed.append((path, _globs(value["allowed"], "server names", "github")))
    if "denied" in value:
        policy.mcp_denied.extend(_globs(value["denied"], "server names", "shell*"))
    policy.sources.setdefault("mcp", path)
