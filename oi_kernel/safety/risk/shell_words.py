"""What the shell review knows about command words: the prefixes to look past (keywords,
``VAR=value``, wrappers such as nohup), privilege, shells and interpreters, downloaders."""

from __future__ import annotations

import re

_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time"}
_WRAPPERS = {"nohup", "exec", "command", "builtin", "stdbuf", "nice", "ionice", "timeout"}
_PRIVILEGE = {"sudo", "doas", "su", "pkexec", "runas"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish"}
_INTERPRETERS = _SHELLS | {"python", "python3", "perl", "ruby", "node"}
_DOWNLOADERS = {"curl", "wget", "fetch"}
_NETWORK = {"curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp"}


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop keywords, `VAR=value` assignments and harmless wrappers such as nohup."""
    while words:
        first = words[0]
        if first in _KEYWORDS or re.match(r"^[A-Za-z_]\w*=", first):
            words = words[1:]
        elif _name(first) in _WRAPPERS or _name(first) == "env" and len(words) > 1:
            rest = words[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0] or rest[0][:1].isdigit()):
                rest = rest[1:]
            if not rest:
                return words if _name(first) == "env" else []
            words = rest
        else:
            return words
    return words
