"""What every reviewer shares: the flag types, facts about paths, and the registry through
which one language's reviewer follows code nested in another (``bash -c "python -c ..."``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

HIGH = "high"
MEDIUM = "medium"
_RANK = {HIGH: 0, MEDIUM: 1}
_MAX_DEPTH = 3  # nested `bash -c "..."` / `python -c "..."` levels that are followed


@dataclass(frozen=True)
class Flag:
    line: int  # 1-based line in the block (0 when it applies to the whole block)
    category: str  # "delete-files", "network", "pipe-to-shell", ...
    severity: str  # "high" | "medium"
    reason: str  # one short sentence for a person and the LLM


@dataclass(frozen=True)
class _Finding:
    """A flag before its line is known."""

    category: str
    severity: str
    text: str


_Found = list[tuple[int, _Finding]]  # (1-based line, finding)


def _flag(line: int, finding: _Finding) -> Flag:
    where = f"line {line}: " if line else ""
    return Flag(line, finding.category, finding.severity, where + finding.text)



# ---------------------------------------------------------------- shared facts

_CREDENTIAL_PATH = re.compile(
    r"(?<![\w.])\.ssh(?![\w-])|(?<![\w.])\.aws(?![\w-])|(?<![\w.])\.netrc(?!\w)"
    r"|(?<![\w.])\.env(?![\w-])|(?<![\w.])\.kube/config|(?<![\w.])\.git-credentials"
    r"|(?<![\w.])\.pgpass(?!\w)|(?<![\w.])\.docker/config\.json|/etc/(?:g?shadow|sudoers)"
    r"|(?<![\w.])id_(?:rsa|dsa|ecdsa|ed25519)(?![\w.])"
)
_SYSTEM_DIRS = ("/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib64", "/sys", "/proc")
_HARMLESS_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/", "/dev/zero")
_ROOT_LIKE = {
    "/": "the whole filesystem",
    "/*": "the whole filesystem",
    "~": "your home directory",
    "~/": "your home directory",
    "~/*": "your home directory",
    "$HOME": "your home directory",
    "${HOME}": "your home directory",
    "$HOME/*": "your home directory",
    "*": "everything in the current directory",
    ".": "the current directory",
    "./": "the current directory",
    "./*": "everything in the current directory",
    "..": "the parent directory",
    "/home": "every user's home directory",
    "/Users": "every user's home directory",
}


_URL = re.compile(
    r"^\s*((?:[a-z][\w.-]*\+)?(?:https?|ftps?|sftp|ssh|git|rsync|smb|wss?|s3[an]?|gs|gcs|az"
    r"|abfss?|adl|hdfs|webhdfs|hf|postgres(?:ql)?|mysql|mariadb|mongodb|redis|rediss|amqps?"
    r"|mssql|oracle|snowflake)(?:\+[\w.]+)?://\S*)",
    re.IGNORECASE,
)


def url_of(text: str) -> str | None:
    """The network URL ``text`` starts with (http, ftp, s3, a database server…), or None."""
    match = _URL.match(text)
    return _short(match.group(1), 60) if match else None


def _credential(text: str) -> str | None:
    """The credentials path mentioned in ``text``, if any."""
    match = _CREDENTIAL_PATH.search(text)
    return match.group(0) if match else None


def _is_system_path(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in _SYSTEM_DIRS)


def _is_disk_device(path: str) -> bool:
    return path.startswith("/dev/") and not path.startswith(_HARMLESS_DEVICES)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- nested code
Reviewer = Callable[[str, int], "_Found"]
REVIEWERS: dict[str, Reviewer] = {}  # filled by oi_kernel.safety.risk


def nested_findings(language: str, code: str, depth: int) -> _Found:
    """The findings of ``code`` in ``language`` (one of ``REVIEWERS``), for nested code."""
    return REVIEWERS[language](code, depth)

