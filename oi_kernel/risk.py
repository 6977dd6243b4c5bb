"""Risk review of a proposed code block, before the user approves it.

``review(language, code)`` returns ``Flag``s that the approval card shows and
that the LLM reads back: what a block might delete, overwrite, download, run,
reveal or install. Python is read through its syntax tree (imports and aliases
resolved), shell through ``shlex`` one command at a time; JavaScript and R get
a light scan for obvious shell-outs and deletes. A flag is advice for a person
who still decides; reviewing never runs anything. Pure: stdlib only, no I/O.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from oi_kernel.languages import normalize_language
from oi_kernel.redact import is_secret_name

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


# ---------------------------------------------------------------- shell: tokens


@dataclass
class _Command:
    words: list[str]
    redirects: list[tuple[str, str]]  # (operator, target)


def _strip_comment(line: str, state: str) -> tuple[str, str]:
    """Drop a ``#`` comment from ``line``; ``state`` is the quote open at its start."""
    out: list[str] = []
    i = 0
    while i < len(line):
        c = line[i]
        if state == "" and c == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            break
        if c == "\\" and state != "'":
            out.append(line[i : i + 2])
            i += 2
            continue
        if state == "" and c in "'\"":
            state = c
        elif state == c:
            state = ""
        out.append(c)
        i += 1
    return "".join(out), state


def _logical_lines(code: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) for each command line: continuations and open quotes joined."""
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        start, parts, state = i, [], ""
        while i < len(lines):
            text, state = _strip_comment(lines[i], state)
            i += 1
            if state == "" and text.endswith("\\") and not text.endswith("\\\\"):
                parts.append(text[:-1])
                continue
            parts.append(text)
            if state == "":
                break
        yield start + 1, "\n".join(parts)


def _tokenize(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes or a trailing backslash: split plainly
        return re.findall(r"[;&|<>()]+|[^\s;&|<>()]+", text)


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in "();<>|&" for c in token)


def _add_redirect(cmd: _Command, op: str, target: str) -> None:
    if cmd.words and cmd.words[-1].isdigit() and len(cmd.words[-1]) == 1:
        cmd.words.pop()  # the fd number of `2>file`
    cmd.redirects.append((op, target))


def _pipelines(tokens: list[str]) -> list[list[_Command]]:
    """Split tokens into pipelines of commands at ; && || & | ( ) and newlines."""
    pipelines: list[list[_Command]] = [[_Command([], [])]]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok[:1] in "<>" and _is_operator(tok) or tok in ("&>", "&>>"):
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            _add_redirect(pipelines[-1][-1], tok, target)
            i += 2
            continue
        if _is_operator(tok):
            if "|" in tok and "||" not in tok:
                pipelines[-1].append(_Command([], []))
            else:
                pipelines.append([_Command([], [])])
        else:
            pipelines[-1][-1].words.append(tok)
        i += 1
    return [[c for c in p if c.words or c.redirects] for p in pipelines if any(c.words for c in p)]


# ---------------------------------------------------------------- shell: commands

_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time"}
_WRAPPERS = {"nohup", "exec", "command", "builtin", "stdbuf", "nice", "ionice", "timeout"}
_PRIVILEGE = {"sudo", "doas", "su", "pkexec", "runas"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish"}
_INTERPRETERS = _SHELLS | {"python", "python3", "perl", "ruby", "node"}
_DOWNLOADERS = {"curl", "wget", "fetch"}
_NETWORK = {"curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp"}
_DISK = {"mkfs", "mkswap", "fdisk", "sfdisk", "cfdisk", "gdisk", "parted", "wipefs", "blkdiscard"}
_INSTALL_VERBS = {
    "pip": {"install", "uninstall", "download"},
    "conda": {"install", "remove", "uninstall", "update", "create"},
    "apt": {"install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade"},
    "yum": {"install", "remove", "erase", "update", "upgrade"},
    "brew": {"install", "uninstall", "upgrade", "reinstall"},
    "npm": {"install", "i", "add", "uninstall", "remove", "rm", "update", "ci"},
    "yarn": {"add", "install", "remove", "global"},
    "gem": {"install", "uninstall"},
    "cargo": {"install"},
    "go": {"install", "get"},
    "poetry": {"add", "install", "remove"},
    "pipx": {"install", "uninstall"},
    "apk": {"add", "del"},
    "snap": {"install", "remove"},
}
_INSTALL_ALIASES = {
    "pip3": "pip",
    "mamba": "conda",
    "micromamba": "conda",
    "apt-get": "apt",
    "dnf": "yum",
    "pnpm": "npm",
}


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _options(words: list[str]) -> tuple[set[str], set[str], list[str]]:
    """(short option letters, long options, other arguments) of a command's arguments."""
    short: set[str] = set()
    long: set[str] = set()
    args: list[str] = []
    for word in words:
        if word.startswith("--") and len(word) > 2:
            long.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1 and not word[1:].isdigit():
            short.update(word[1:])
        else:
            args.append(word)
    return short, long, args


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


def _unwrap_python_m(words: list[str]) -> list[str]:
    """`python -m pip install x` → `pip install x` (also for `{sys.executable} -m pip`)."""
    name = _name(words[0])
    if ("python" in name or "executable" in name) and "-m" in words:
        i = words.index("-m")
        if i + 1 < len(words):
            return words[i + 1 :]
    return words


def _check_rm(words: list[str]) -> list[_Finding]:
    short, long, targets = _options(words[1:])
    recursive = bool({"r", "R"} & short) or "--recursive" in long
    force = "f" in short or "--force" in long
    cmd = ("rm -" + "r" * recursive + "f" * force) if recursive or force else "rm"
    if not targets:
        return []
    for target in targets:
        if target in _ROOT_LIKE and (recursive or target in ("/", "~", "$HOME", "*", "./*")):
            return [_Finding("delete-files", HIGH, f"{cmd} {target} deletes {_ROOT_LIKE[target]}")]
        if _is_system_path(target):
            text = f"{cmd} deletes '{target}' in a system directory"
            return [_Finding("delete-files", HIGH, text)]
    shown = ", ".join(f"'{t}'" for t in targets[:3]) + (" …" if len(targets) > 3 else "")
    if recursive or force:
        how = " and everything under it" if recursive else ""
        how += " without asking" if force else ""
        return [_Finding("delete-files", HIGH, f"{cmd} deletes {shown}{how}")]
    return [_Finding("delete-files", MEDIUM, f"rm deletes {shown}")]


def _check_delete_like(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    _, _, targets = _options(words[1:])
    severity = HIGH if name == "shred" or any(map(_is_system_path, targets)) else MEDIUM
    shown = ", ".join(f"'{t}'" for t in targets[:3]) or "files"
    return [_Finding("delete-files", severity, f"{name} deletes {shown}")]


def _check_find(words: list[str]) -> list[_Finding]:
    out: list[_Finding] = []
    if "-delete" in words:
        out.append(_Finding("delete-files", HIGH, "find -delete deletes every file it matches"))
    for i, word in enumerate(words):
        if word in ("-exec", "-execdir", "-ok") and i + 1 < len(words):
            out.extend(_command_findings(_Command(words[i + 1 :], []), 0))
    return out


def _check_permissions(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    short, long, args = _options(words[1:])
    recursive = "R" in short or "--recursive" in long
    targets = args[1:] if args else []
    danger = [t for t in targets if t in _ROOT_LIKE or _is_system_path(t)]
    if danger:
        text = f"{name} changes permissions or owner of '{danger[0]}'"
        return [_Finding("permissions", HIGH, text + (" recursively" if recursive else ""))]
    if recursive:
        shown = ", ".join(f"'{t}'" for t in targets[:3])
        return [_Finding("permissions", MEDIUM, f"{name} -R changes everything under {shown}")]
    return []


def _check_dd(words: list[str]) -> list[_Finding]:
    target = next((w[3:] for w in words if w.startswith("of=")), "")
    if _is_disk_device(target):
        text = f"dd writes raw bytes onto the device {target}, destroying what is on it"
        return [_Finding("disk", HIGH, text)]
    return [_Finding("disk", MEDIUM, f"dd copies raw bytes{' into ' + target if target else ''}")]


def _check_disk(words: list[str]) -> list[_Finding]:
    return [_Finding("disk", HIGH, f"{_name(words[0])} rewrites a disk or partition")]


def _check_kill(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    args = words[1:]
    nine = any(a in ("-9", "-KILL", "-SIGKILL", "-s9") for a in args)
    if name == "kill" and any(a in ("-1", "1") for a in args if a != "-9"):
        return [_Finding("process-kill", HIGH, "kill targets every process (or init)")]
    how = " with SIGKILL" if nine else ""
    shown = _short(" ".join(a for a in args if not a.startswith("-")), 40) or "processes"
    return [_Finding("process-kill", MEDIUM, f"{name} stops {shown}{how}")]


_READ_ONLY_SYSTEM = {
    "systemctl": {"status", "list-units", "show", "is-active", "is-enabled", "cat", ""},
    "crontab": {"-l"},
    "iptables": {"-L", "-S", "--list"},
    "ufw": {"status"},
    "sysctl": {"-a", "-n", ""},
}


def _check_system(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    verb = words[1] if len(words) > 1 else ""
    if name in ("shutdown", "reboot", "halt", "poweroff") or (
        name == "init" and verb in ("0", "6")
    ):
        return [_Finding("system-config", HIGH, f"{name} shuts down or restarts the machine")]
    if name == "systemctl" and verb in ("poweroff", "reboot", "halt"):
        return [_Finding("system-config", HIGH, f"systemctl {verb} shuts down the machine")]
    if name == "init" or verb in _READ_ONLY_SYSTEM.get(name, set()):
        return []
    text = f"{_short(' '.join(words[:3]))} changes system settings"
    return [_Finding("system-config", MEDIUM, text)]


def _check_install(words: list[str]) -> list[_Finding]:
    name = _INSTALL_ALIASES.get(_name(words[0]), _name(words[0]))
    rest = [w for w in words[1:] if not w.startswith("-")]
    if name == "uv" and rest[:1] == ["pip"]:
        name, rest = "pip", rest[1:]
    elif name == "uv":
        name, rest = "poetry", rest  # uv add / uv remove behave like poetry's
    verbs = _INSTALL_VERBS.get(name, set())
    if not rest or rest[0] not in verbs:
        return []
    text = f"{_short(' '.join(words))} changes the installed packages"
    return [_Finding("package-install", MEDIUM, text)]


def _check_git(words: list[str]) -> list[_Finding]:
    verb = next((w for w in words[1:] if not w.startswith("-")), "")
    short, long, args = _options(words[words.index(verb) + 1 :] if verb else [])
    if verb == "push" and ("f" in short or long & {"--force", "--force-with-lease"}):
        return [_Finding("git-destructive", MEDIUM, "git push --force rewrites remote history")]
    if verb == "push" and any(a.startswith("+") for a in args):
        return [_Finding("git-destructive", MEDIUM, "git push +ref rewrites remote history")]
    if verb == "reset" and "--hard" in long:
        return [
            _Finding("git-destructive", MEDIUM, "git reset --hard discards uncommitted changes")
        ]
    if verb == "clean" and "f" in short:
        return [_Finding("git-destructive", MEDIUM, "git clean -f deletes untracked files")]
    return []


def _check_network(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    host = next((w for w in words[1:] if not w.startswith("-")), "")
    where = f" ({_short(host, 50)})" if host else ""
    return [_Finding("network", MEDIUM, f"{name} connects to the network{where}")]


def _check_env_dump(words: list[str]) -> list[_Finding]:
    name = _name(words[0])
    names = [w for w in words[1:] if not w.startswith("-")]
    if not names:
        text = f"{name} prints every environment variable, including any secrets"
        return [_Finding("secrets-env", MEDIUM, text)]
    return []  # printenv NAME: handled by the $NAME / secret-name scan


def _check_writers(words: list[str]) -> list[_Finding]:
    """cp/mv/tee/touch/ln/sed -i/truncate: system paths high, overwrites medium."""
    name = _name(words[0])
    short, long, args = _options(words[1:])
    written = args[-1:] if name in ("cp", "mv", "ln") else args
    system = [a for a in written if _is_system_path(a)]
    if system:
        return [
            _Finding("system-config", HIGH, f"{name} writes '{system[0]}' in a system directory")
        ]
    if name == "mv" and len(args) >= 2:
        text = f"mv moves {', '.join(args[:-1])} to '{args[-1]}', replacing it if it exists"
        return [_Finding("overwrite-file", MEDIUM, text)]
    if name == "tee" and "a" not in short and "--append" not in long and args:
        return [_Finding("overwrite-file", MEDIUM, f"tee replaces the contents of '{args[0]}'")]
    if name == "sed" and ("i" in short or "--in-place" in long) and len(args) >= 2:
        return [_Finding("overwrite-file", MEDIUM, f"sed -i edits '{args[-1]}' in place")]
    if name == "truncate" and args:
        return [_Finding("overwrite-file", MEDIUM, f"truncate cuts '{args[-1]}' short")]
    return []


def _check_nested(words: list[str], depth: int) -> list[_Finding]:
    """`bash -c "..."`, `eval "..."`, `python -c "..."`: review the inner code too."""
    name = _name(words[0])
    if depth >= _MAX_DEPTH:
        return []
    if (name in _SHELLS or name.startswith("python")) and "-c" in words[:-1]:
        inner = words[words.index("-c") + 1]
    elif name == "eval":
        inner = " ".join(words[1:])
    else:
        return []
    if name.startswith("python"):
        return [f for _, f in _python_findings(inner, depth + 1)]
    return [f for _, f in _shell_findings(inner, depth + 1)]


_CHECKS: dict[str, Callable[[list[str]], list[_Finding]]] = {
    "rm": _check_rm,
    "rmdir": _check_delete_like,
    "unlink": _check_delete_like,
    "shred": _check_delete_like,
    "find": _check_find,
    "chmod": _check_permissions,
    "chown": _check_permissions,
    "chgrp": _check_permissions,
    "dd": _check_dd,
    **{n: _check_disk for n in _DISK},
    "kill": _check_kill,
    "pkill": _check_kill,
    "killall": _check_kill,
    "git": _check_git,
    "env": _check_env_dump,
    "printenv": _check_env_dump,
    **{n: _check_system for n in ("shutdown", "reboot", "halt", "poweroff", "init")},
    **{n: _check_system for n in ("systemctl", "crontab", "iptables", "ufw", "sysctl")},
    **{n: _check_install for n in (*_INSTALL_VERBS, *_INSTALL_ALIASES, "uv")},
    **{n: _check_network for n in _NETWORK},
    **{n: _check_writers for n in ("cp", "mv", "tee", "touch", "ln", "sed", "truncate")},
}


def _check_privilege(words: list[str], depth: int) -> tuple[list[_Finding], list[str]]:
    """A finding for sudo/su/doas and the command it runs (if any)."""
    name = _name(words[0])
    found = [_Finding("privilege", HIGH, f"{name} runs a command as another user (root)")]
    rest = words[1:]
    if name == "su":
        inner = rest[rest.index("-c") + 1] if "-c" in rest[:-1] else ""
        found += [f for _, f in _shell_findings(inner, depth + 1)] if depth < _MAX_DEPTH else []
        return found, []
    while rest and rest[0].startswith("-"):
        takes_value = rest[0] in ("-u", "-g", "-C", "-D", "-p", "-U", "-r", "-t", "-h")
        rest = rest[2:] if takes_value else rest[1:]
    return found, rest


def _scan_words(name: str, words: list[str]) -> list[_Finding]:
    """Credentials paths and secret variables mentioned anywhere in a command."""
    out: list[_Finding] = []
    for word in words:
        path = _credential(word)
        if path:
            out.append(_Finding("credentials", HIGH, f"{name} uses '{word}', a credentials file"))
        for var in re.findall(r"\$\{?([A-Za-z_]\w*)", word):
            if is_secret_name(var):
                text = f"{name} uses ${var}, a secret environment variable"
                out.append(_Finding("secrets-env", HIGH, text))
    return out


def _unwrap_xargs(words: list[str]) -> list[str]:
    """`xargs rm -f` → `rm -f <files from stdin>`."""
    args = words[1:]
    while args and args[0].startswith("-"):
        args = args[2:] if args[0] in ("-I", "-n", "-P", "-d", "-L", "-s", "-E") else args[1:]
    return [*args, "<files from stdin>"] if args else []


def _command_findings(cmd: _Command, depth: int) -> list[_Finding]:
    words = _strip_prefixes(cmd.words)
    out: list[_Finding] = []
    while words and _name(words[0]) in _PRIVILEGE:
        found, words = _check_privilege(words, depth)
        out += found
        words = _strip_prefixes(words)
    if words and _name(words[0]) == "xargs":
        words = _unwrap_xargs(words)
    if words:
        words = _unwrap_python_m(words)
        name = _name(words[0])
        name = "mkfs" if name.startswith("mkfs.") else name
        check = _CHECKS.get(name)
        out += check(words) if check else []
        out += _check_nested(words, depth)
        out += _scan_words(name, words[1:])
    return out + _redirect_findings(cmd.redirects)


def _redirect_findings(redirects: list[tuple[str, str]]) -> list[_Finding]:
    out: list[_Finding] = []
    for op, target in redirects:
        if not target or target.isdigit() or target.startswith(_HARMLESS_DEVICES):
            continue
        if op.startswith("<"):
            if _credential(target):
                out.append(_Finding("credentials", HIGH, f"reads '{target}', a credentials file"))
            continue
        if _is_disk_device(target):
            out.append(_Finding("disk", HIGH, f"'{op} {target}' writes onto a disk device"))
        elif _is_system_path(target):
            out.append(_Finding("system-config", HIGH, f"'{op} {target}' writes a system file"))
        elif _credential(target):
            out.append(_Finding("credentials", HIGH, f"'{op} {target}' writes a credentials file"))
        elif ">>" not in op:
            text = f"'{op} {target}' replaces the contents of {target}"
            out.append(_Finding("overwrite-file", MEDIUM, text))
    return out


def _feeds_interpreter(cmd: _Command) -> bool:
    """True when the command runs whatever arrives on stdin (`sh`, `sudo bash -s`, `python -`)."""
    words = _strip_prefixes(cmd.words)
    while words and _name(words[0]) in _PRIVILEGE:
        words = _strip_prefixes(words[1:])
    if not words or _name(words[0]) not in _INTERPRETERS:
        return False
    args = words[1:]
    return "-s" in args or "-" in args or all(w.startswith("-") for w in args)


def _pipeline_findings(pipeline: list[_Command], depth: int) -> list[_Finding]:
    downloads = [i for i, c in enumerate(pipeline) if c.words and _name(c.words[0]) in _DOWNLOADERS]
    shell_at = next((i for i, c in enumerate(pipeline) if i and _feeds_interpreter(c)), None)
    out: list[_Finding] = []
    piped = shell_at is not None and any(i < shell_at for i in downloads)
    if piped:
        src, dst = pipeline[downloads[0]].words, pipeline[shell_at].words
        text = f"{_name(src[0])} … | {_name(dst[-1])} runs a script from the internet unseen"
        out.append(_Finding("pipe-to-shell", HIGH, text))
    for i, cmd in enumerate(pipeline):
        found = _command_findings(cmd, depth)
        if piped and i in downloads:
            found = [f for f in found if f.category != "network"]
        out += found
    return out


_FORK_BOMB = re.compile(r"([\w:.-]{1,40})\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}")
_SUBST_PIPE = re.compile(
    r"\b(?:(?:ba|z|da|k)?sh|eval|source)\b[^|;&\n]{0,200}?(?:<\(|\$\(|`)\s*(?:curl|wget)\b"
)


def _line_findings(text: str, depth: int) -> list[_Finding]:
    out: list[_Finding] = []
    if "()" in text and _FORK_BOMB.search(text):
        out.append(
            _Finding("fork-bomb", HIGH, "a fork bomb: it starts processes until the machine hangs")
        )
    if ("curl" in text or "wget" in text) and _SUBST_PIPE.search(text):
        out.append(_Finding("pipe-to-shell", HIGH, "runs a script fetched by curl/wget unseen"))
    for pipeline in _pipelines(_tokenize(text)):
        out += _pipeline_findings(pipeline, depth)
    return out


def _heredoc(text: str) -> tuple[str, bool] | None:
    """(delimiter, runs the body as shell) when a line opens a heredoc."""
    match = re.search(r"<<-?\s*['\"]?([A-Za-z_]\w*)['\"]?", text)
    if not match:
        return None
    head = _strip_prefixes(_tokenize(text[: match.start()]))
    while head and _name(head[0]) in _PRIVILEGE:
        head = _strip_prefixes(head[1:])
    return match.group(1), bool(head) and _name(head[0]) in _SHELLS


def _shell_findings(code: str, depth: int = 0) -> _Found:
    """Findings of a shell script with their 1-based line numbers."""
    out: _Found = []
    skip_until: tuple[str, int] | None = None
    for line, text in _logical_lines(code):
        if skip_until is not None:
            if text.strip() == skip_until[0]:
                skip_until = None
            continue
        out += [(line, f) for f in _line_findings(text, depth)]
        doc = _heredoc(text)
        if doc and not doc[1]:
            skip_until = (doc[0], line)  # a heredoc is data, unless fed to a shell
    return out


# ---------------------------------------------------------------- python

_NETWORK_MODULES = (
    "socket",
    "urllib.request",
    "requests",
    "httpx",
    "aiohttp",
    "urllib3",
    "http.client",
    "ftplib",
    "smtplib",
    "telnetlib",
    "poplib",
    "imaplib",
    "paramiko",
    "websocket",
    "websockets",
)
_NOT_NETWORK = ("gethostname", "pathname2url", "url2pathname", "inet_aton", "inet_ntoa")
_SHELL_CALLS = {
    "os.system",
    "os.popen",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "pty.spawn",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
}
_SHELL_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
_DELETE_CALLS = {
    "os.remove": (MEDIUM, "deletes the file {target}"),
    "os.unlink": (MEDIUM, "deletes the file {target}"),
    "os.rmdir": (MEDIUM, "removes the directory {target}"),
    "os.removedirs": (MEDIUM, "removes the directories {target}"),
    "shutil.rmtree": (HIGH, "deletes the directory tree {target} recursively"),
}
_MOVE_CALLS = {"shutil.move", "os.replace", "os.rename", "os.renames"}
_KILL_CALLS = {"os.kill", "os.killpg", "signal.pthread_kill", "signal.raise_signal"}
_PERMISSION_CALLS = {"os.chmod", "os.lchmod", "os.chown", "os.lchown", "shutil.chown"}
_PRIVILEGE_CALLS = {"os.setuid", "os.seteuid", "os.setgid", "os.setegid", "os.setreuid"}
_ENV_READS = {"os.getenv", "os.environ.get", "os.environ.pop", "os.environ.setdefault", "os.putenv"}
_DUMPERS = {
    "print",
    "repr",
    "str",
    "pprint.pprint",
    "pprint.pp",
    "json.dumps",
    "json.dump",
    "display",
}
_OPEN_CALLS = {"open", "io.open", "codecs.open"}
_MODE = re.compile(r"[rwxabt+U]{1,4}")


def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _target(node: ast.AST) -> str | None:
    """The literal path an expression names: ``"x"``, ``Path("a", "b")``, ``Path("/etc") / "x"``."""
    text = _literal(node)
    if text is not None:
        return text
    if isinstance(node, ast.Call) and node.args and len(node.args) <= 4:
        parts = [_target(a) for a in node.args]
        return "/".join(p for p in parts if p is not None) if None not in parts else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _target(node.left), _target(node.right)
        return f"{left.rstrip('/')}/{right}" if left is not None and right is not None else None
    return None


def _render(node: ast.AST) -> str | None:
    """Source-like text of a command argument; run-time parts appear as ``{expr}``.

    ``["rm", "-rf", path]`` → ``rm -rf {path}``; ``f"ls {d}"`` → ``ls {d}``.
    """
    text = _literal(node)
    if text is not None:
        return text
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v) + "}"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _render(node.left), _render(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.List | ast.Tuple):
        words = [_literal(e) for e in node.elts]
        shown = [
            shlex.quote(w) if w is not None else "{" + ast.unparse(e) + "}"
            for w, e in zip(words, node.elts, strict=True)
        ]
        return " ".join(shown)
    return None


class _PythonReviewer:
    """Walks one parsed module and collects findings with their lines."""

    def __init__(self, tree: ast.Module, depth: int) -> None:
        self.tree = tree
        self.depth = depth
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        self.tainted: set[str] = set()
        self.found: _Found = []

    def run(self) -> _Found:
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        self._taint()
        for node in ast.walk(self.tree):
            self._visit(node)
        return self.found

    def _add(self, node: ast.AST, category: str, severity: str, text: str) -> None:
        self.found.append((getattr(node, "lineno", 0), _Finding(category, severity, text)))

    # -- names

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.aliases[local] = alias.name if alias.asname else local
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.star_modules.append(module)
            else:
                self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def _dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and self._dotted(node.func) in (
            "__import__",
            "importlib.import_module",
        ):
            return _literal(node.args[0]) if node.args else None
        return None

    def qualname(self, node: ast.AST) -> str | None:
        """``sh.rmtree`` → ``shutil.rmtree`` after ``import shutil as sh``."""
        dotted = self._dotted(node)
        if dotted is None:
            return None
        head, _, tail = dotted.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
            return f"{full}.{tail}" if tail else full
        if isinstance(node, ast.Name):
            for module in self.star_modules:
                candidate = f"{module}.{head}"
                if candidate in _SHELL_CALLS | _MOVE_CALLS | _KILL_CALLS | set(_DELETE_CALLS):
                    return candidate
        return dotted

    def _is_network_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.qualname(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last.endswith(("Error", "Exception", "Timeout", "Limits")) or last in _NOT_NETWORK:
            return False
        return any(name == m or name.startswith(m + ".") for m in _NETWORK_MODULES)

    def _is_remote(self, node: ast.AST) -> bool:
        """Does ``node`` contain a network call or a variable that holds downloaded data?"""
        return any(
            self._is_network_call(n) or isinstance(n, ast.Name) and n.id in self.tainted
            for n in ast.walk(node)
        )

    def _taint(self) -> None:
        for _ in range(3):  # follow `r = requests.get(u)` → `code = r.text` → `exec(code)`
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self._is_remote(node.value):
                        self.tainted |= {
                            n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                        }
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    if self._is_remote(node.context_expr):
                        self.tainted |= {
                            n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)
                        }

    # -- visiting

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            path = _credential(node.value)
            if path:
                text = f"refers to '{_short(node.value, 50)}', a credentials file"
                self._add(node, "credentials", HIGH, text)
        elif isinstance(node, ast.Subscript):
            self._env_subscript(node)
        if isinstance(node, ast.Name | ast.Attribute) and self.qualname(node) == "os.environ":
            self._env_dump(node)

    def _call(self, node: ast.Call) -> None:
        name = self.qualname(node.func)
        handlers: tuple[Callable[[ast.Call, str], bool], ...] = (
            self._shell_call,
            self._delete_call,
            self._move_call,
            self._open_call,
            self._network_call,
            self._dynamic_call,
            self._env_call,
            self._misc_call,
        )
        if name and any(handler(node, name) for handler in handlers):
            return
        if isinstance(node.func, ast.Attribute):
            self._method_call(node, node.func)

    def _shell_call(self, node: ast.Call, name: str) -> bool:
        if name not in _SHELL_CALLS and not name.startswith(_SHELL_PREFIXES):
            return False
        text = self._command_text(node, name)
        findings = [f for _, f in _shell_findings(text, self.depth + 1)] if text else []
        for finding in findings if self.depth < _MAX_DEPTH else []:
            self._add(node, finding.category, finding.severity, f"{name}: {finding.text}")
        if not findings and (text is None or text.startswith("{")):
            what = f"`{_short(text)}`" if text else "a command"
            text = f"{name} runs {what} built at run time, so it was not reviewed"
            self._add(node, "shell-command", MEDIUM, text)
        return True

    def _command_text(self, node: ast.Call, name: str) -> str | None:
        keyword = next((k.value for k in node.keywords if k.arg == "args"), None)
        if keyword is not None:
            return _render(keyword)
        if name == "asyncio.create_subprocess_exec":
            return _render(ast.List(elts=list(node.args), ctx=ast.Load()))
        if name.startswith(_SHELL_PREFIXES):
            seq = next((a for a in node.args if isinstance(a, ast.List | ast.Tuple)), None)
            return _render(seq) if seq is not None else None
        return _render(node.args[0]) if node.args else None

    def _delete_call(self, node: ast.Call, name: str) -> bool:
        if name not in _DELETE_CALLS:
            return False
        severity, template = _DELETE_CALLS[name]
        arg = node.args[0] if node.args else None
        target = _target(arg) if arg is not None else None
        shown = f"'{target}'" if target is not None else _short(ast.unparse(arg), 40) if arg else ""
        text = f"{name} {template.format(target=shown)}"
        if target is not None and (target in _ROOT_LIKE or _is_system_path(target)):
            severity = HIGH
            text += f": {_ROOT_LIKE.get(target, 'a system directory')}"
        self._add(node, "delete-files", severity, text)
        return True

    def _move_call(self, node: ast.Call, name: str) -> bool:
        if name not in _MOVE_CALLS:
            return False
        dst = node.args[1] if len(node.args) > 1 else None
        dst_text = _target(dst) if dst is not None else None
        if dst_text is not None and _is_system_path(dst_text):
            self._add(
                node, "system-config", HIGH, f"{name} writes '{dst_text}' in a system directory"
            )
        else:
            shown = f"'{dst_text}'" if dst_text else "the destination"
            self._add(
                node,
                "overwrite-file",
                MEDIUM,
                f"{name} moves a file onto {shown}, replacing it if it exists",
            )
        return True

    def _open_call(self, node: ast.Call, name: str) -> bool:
        if name not in _OPEN_CALLS:
            return False
        path = node.args[0] if node.args else None
        mode = node.args[1] if len(node.args) > 1 else None
        mode = next((k.value for k in node.keywords if k.arg == "mode"), mode)
        self._check_open(node, path, _literal(mode) or "r", name)
        return True

    def _check_open(self, node: ast.Call, path: ast.AST | None, mode: str, name: str) -> None:
        target = _target(path) if path is not None else None
        writes = bool(set(mode) & set("wax+"))
        if target is not None and writes and _is_disk_device(target):
            self._add(node, "disk", HIGH, f"{name} writes onto the device {target}")
        elif target is not None and writes and _is_system_path(target):
            self._add(
                node, "system-config", HIGH, f"{name} writes '{target}' in a system directory"
            )
        elif "w" in mode:
            shown = f"'{target}'" if target is not None else "a file"
            self._add(
                node,
                "overwrite-file",
                MEDIUM,
                f"{name}(…, {mode!r}) replaces the contents of {shown}",
            )

    def _network_call(self, node: ast.Call, name: str) -> bool:
        if not self._is_network_call(node):
            return False
        url = _literal(node.args[0]) if node.args else None
        where = f" ({_short(url, 50)})" if url else ""
        self._add(node, "network", MEDIUM, f"{name} connects to the network{where}")
        return True

    def _dynamic_call(self, node: ast.Call, name: str) -> bool:
        if name not in ("eval", "exec", "compile") or not node.args:
            return False
        if _literal(node.args[0]) is not None:
            return True
        if self._is_remote(node.args[0]):
            self._add(node, "dynamic-code", HIGH, f"{name} runs code downloaded from the network")
        else:
            arg = _short(ast.unparse(node.args[0]), 40)
            self._add(node, "dynamic-code", MEDIUM, f"{name} runs code built at run time ({arg})")
        return True

    def _env_call(self, node: ast.Call, name: str) -> bool:
        if name not in _ENV_READS:
            return False
        var = _literal(node.args[0]) if node.args else None
        if var is not None and is_secret_name(var):
            self._add(
                node, "secrets-env", HIGH, f"{name} reads the secret environment variable {var}"
            )
        return True

    def _misc_call(self, node: ast.Call, name: str) -> bool:
        if name in _KILL_CALLS:
            self._add(
                node, "process-kill", MEDIUM, f"{name} sends a signal that can stop a process"
            )
        elif name in _PERMISSION_CALLS:
            target = _target(node.args[0]) if node.args else None
            severity = HIGH if target is not None and _is_system_path(target) else MEDIUM
            self._add(
                node,
                "permissions",
                severity,
                f"{name} changes permissions or owner of {target or 'a path'}",
            )
        elif name in _PRIVILEGE_CALLS:
            self._add(node, "privilege", HIGH, f"{name} changes the user the process runs as")
        elif name in ("pip.main", "pip._internal.main"):
            self._add(node, "package-install", MEDIUM, f"{name} changes the installed packages")
        else:
            return False
        return True

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """Calls on objects whose type is unknown: pathlib-style methods and `.open(mode)`."""
        owner = _short(ast.unparse(func.value), 40)
        target = _target(func.value)
        if func.attr in ("unlink", "rmdir") and not node.args:
            self._add(
                node,
                "delete-files",
                MEDIUM,
                f"{owner}.{func.attr}() deletes {repr(target) if target else 'the path'}",
            )
        elif func.attr in ("write_text", "write_bytes"):
            if target is not None and _is_system_path(target):
                self._add(
                    node,
                    "system-config",
                    HIGH,
                    f"{func.attr} writes '{target}' in a system directory",
                )
            else:
                self._add(
                    node,
                    "overwrite-file",
                    MEDIUM,
                    f"{owner}.{func.attr}() replaces the contents of the file",
                )
        elif func.attr == "open":
            self._method_open(node, func)

    def _method_open(self, node: ast.Call, func: ast.Attribute) -> None:
        """``Path("x").open("w")``, ``tarfile.open("x.tar", "w")``."""
        literals = [_literal(a) for a in node.args[:2]]
        mode_at = next((i for i, m in enumerate(literals) if m and _MODE.fullmatch(m)), None)
        mode = next((_literal(k.value) for k in node.keywords if k.arg == "mode"), None)
        mode = mode or (literals[mode_at] if mode_at is not None else "r")
        path = node.args[0] if node.args and mode_at != 0 else func.value
        self._check_open(node, path, mode, f"{_short(ast.unparse(func.value), 40)}.open")

    def _env_subscript(self, node: ast.Subscript) -> None:
        if self.qualname(node.value) != "os.environ":
            return
        var = _literal(node.slice)
        if var is not None and is_secret_name(var):
            verb = "sets" if isinstance(node.ctx, ast.Store) else "reads"
            self._add(
                node,
                "secrets-env",
                HIGH,
                f"os.environ[...] {verb} the secret environment variable {var}",
            )

    def _env_dump(self, node: ast.AST) -> None:
        parent = self.parents.get(node)
        dumped = isinstance(parent, ast.Expr | ast.FormattedValue) or (
            isinstance(parent, ast.Attribute) and parent.attr in ("items", "values")
        )
        if isinstance(parent, ast.Call) and node in parent.args:
            dumped = self.qualname(parent.func) in _DUMPERS
        if dumped:
            self._add(
                node,
                "secrets-env",
                MEDIUM,
                "shows the whole environment, which may include secrets",
            )


# ---------------------------------------------------------------- IPython syntax

_MAGIC_LINE = re.compile(r"^(\s*)(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)?([!%])(.*)$")
_HELP_LINE = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_SHELL_MAGICS = {"sx", "system", "sc"}
_COMMAND_MAGICS = {"pip", "conda", "mamba", "micromamba", "uv", "rm", "rmdir", "mv", "cp", "cat"}


def _line_magic_findings(kind: str, body: str, depth: int) -> list[_Finding]:
    if kind == "!":
        return [f for _, f in _shell_findings(body.lstrip("!"), depth)]
    name, _, rest = body.partition(" ")
    if name in _SHELL_MAGICS:
        return [f for _, f in _shell_findings(rest, depth)]
    if name in _COMMAND_MAGICS:
        return [f for _, f in _shell_findings(body, depth)]
    if name == "env":
        var = re.split(r"[\s=]", rest.strip(), maxsplit=1)[0]
        if not var:
            return [
                _Finding(
                    "secrets-env",
                    MEDIUM,
                    "%env shows every environment variable, including any secrets",
                )
            ]
        if is_secret_name(var):
            return [
                _Finding("secrets-env", HIGH, f"%env uses the secret environment variable {var}")
            ]
    if name == "run" and rest.strip():
        return [
            _Finding("dynamic-code", MEDIUM, f"%run runs {_short(rest)}, which was not reviewed")
        ]
    return []


def _strip_ipython(code: str, depth: int) -> tuple[str, _Found]:
    """Python source with `!cmd`, `%magic` and `obj?` lines blanked, and their findings."""
    lines = code.split("\n")
    found: _Found = []
    for i, line in enumerate(lines):
        match = _MAGIC_LINE.match(line)
        if match:
            found += [(i + 1, f) for f in _line_magic_findings(match[2], match[3], depth)]
            lines[i] = match[1] + "pass"
        elif _HELP_LINE.match(line):
            lines[i] = line[: len(line) - len(line.lstrip())] + "pass"
    return "\n".join(lines), found


def _cell_magic_findings(code: str, depth: int) -> _Found | None:
    """Findings for a cell starting with `%%name`, or None when it is not one."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not lines[first].lstrip().startswith("%%"):
        return None
    head = lines[first].strip()[2:].split()
    name, args = (head[0], head[1:]) if head else ("", [])
    body = "\n".join(lines[first + 1 :])
    offset = first + 1
    if name in ("script", "!") and args:
        name = {"node": "javascript", "Rscript": "R"}.get(_name(args[0]), _name(args[0]))
    reviewers: dict[str, Callable[[str, int], _Found]] = {
        **{n: _shell_findings for n in ("bash", "sh", "zsh", "sx", "system")},
        **{n: _python_findings for n in ("capture", "time", "timeit", "prun", "python", "python3")},
        **{n: _light_findings_fn("javascript") for n in ("javascript", "js")},
        "R": _light_findings_fn("r"),
    }
    if name in reviewers:
        return [(offset + line, f) for line, f in reviewers[name](body, depth)]
    if name == "writefile":
        return _writefile_findings(offset, args)
    if name in ("html", "markdown", "latex", "svg", "HTML"):
        return []
    return [(offset, _Finding("unparseable", MEDIUM, f"the cell magic %%{name} is not reviewed"))]


def _writefile_findings(line: int, args: list[str]) -> _Found:
    path = next((a for a in args if not a.startswith("-")), "")
    if "-a" in args or "--append" in args:
        return (
            [(line, _Finding("system-config", HIGH, f"%%writefile writes '{path}'"))]
            if _is_system_path(path)
            else []
        )
    severity, category = (
        (HIGH, "system-config") if _is_system_path(path) else (MEDIUM, "overwrite-file")
    )
    return [(line, _Finding(category, severity, f"%%writefile replaces the contents of '{path}'"))]


def _python_findings(code: str, depth: int = 0) -> _Found:
    cell = _cell_magic_findings(code, depth)
    if cell is not None:
        return cell
    found: _Found = []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        code, found = _strip_ipython(code, depth)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError) as error:
            line = getattr(error, "lineno", None) or 0
            detail = getattr(error, "msg", None) or str(error)
            text = f"could not parse the Python ({_short(detail, 50)}), so it was not reviewed"
            return [*found, (line, _Finding("unparseable", MEDIUM, text))]
    return found + _PythonReviewer(tree, depth).run()


# ---------------------------------------------------------------- javascript and r

_JS_SHELL = re.compile(
    r"\b(?:execSync|execFileSync|spawnSync|exec|execFile|spawn)\s*\(\s*(?:(['\"`])((?:\\.|(?!\1).)*)\1)?"
)
_JS_DELETE = re.compile(
    r"\b(?:fs|fsp|fse|promises)\.(?:rmSync|rm|rmdirSync|rmdir|unlinkSync|unlink|removeSync|remove|emptyDirSync)\s*\(|\brimraf\w*\s*\("
)
_JS_WRITE = re.compile(r"\b(?:fs|fsp|fse|promises)\.(?:writeFileSync|writeFile)\s*\(")
_R_SHELL = re.compile(r"\b(?:system2?|shell)\s*\(\s*(?:(['\"])((?:\\.|(?!\1).)*)\1)?")
_R_DELETE = re.compile(r"\b(?:unlink|file\.remove|file_delete|dir_delete)\s*\(")
_R_INSTALL = re.compile(r"\binstall\.packages\s*\(|\b(?:remotes|devtools|BiocManager)::install")
_RECURSIVE = re.compile(r"recursive\s*[:=]\s*(?:true|TRUE|T)\b")
_ENV_NAME = re.compile(r"(?:process\.env\.|Sys\.getenv\s*\(\s*['\"])([A-Za-z_]\w*)")


def _strip_line_comment(line: str, marker: str) -> str:
    """``line`` without a trailing ``//`` or ``#`` comment that is outside quotes."""
    state = ""
    for i, c in enumerate(line):
        if state == "" and line.startswith(marker, i):
            return line[:i]
        if c in "'\"`" and (i == 0 or line[i - 1] != "\\"):
            state = "" if state == c else state or c
    return line


def _call_name(match: re.Match[str]) -> str:
    return match.group(0).split("(")[0].strip()


def _shell_out(match: re.Match[str], depth: int) -> list[_Finding]:
    name = _call_name(match)
    if match.group(2) is None:
        text = f"{name} runs a command built at run time, so it was not reviewed"
        return [_Finding("shell-command", MEDIUM, text)]
    if depth >= _MAX_DEPTH:
        return []
    found = _shell_findings(match.group(2), depth + 1)
    return [_Finding(f.category, f.severity, f"{name}: {f.text}") for _, f in found]


def _light_line(line: str, language: str, depth: int, shells_out: bool) -> list[_Finding]:
    out: list[_Finding] = []
    js = language == "javascript"
    shell, delete, write = (_JS_SHELL, _JS_DELETE, _JS_WRITE) if js else (_R_SHELL, _R_DELETE, None)
    for match in shell.finditer(line) if shells_out else ():
        out += _shell_out(match, depth)
    for match in delete.finditer(line):
        recursive = _RECURSIVE.search(line) or "rimraf" in match.group(0)
        text = f"{_call_name(match)} deletes files" + (" recursively" if recursive else "")
        out.append(_Finding("delete-files", HIGH if recursive else MEDIUM, text))
    for match in write.finditer(line) if write else ():
        text = f"{_call_name(match)} replaces the contents of a file"
        out.append(_Finding("overwrite-file", MEDIUM, text))
    if not js and _R_INSTALL.search(line):
        out.append(_Finding("package-install", MEDIUM, "installs R packages"))
    path = _credential(line)
    if path:
        out.append(_Finding("credentials", HIGH, f"refers to '{path}', a credentials file"))
    for var in filter(is_secret_name, _ENV_NAME.findall(line)):
        text = f"reads the secret environment variable {var}"
        out.append(_Finding("secrets-env", HIGH, text))
    return out


def _light_findings_fn(language: str) -> Callable[[str, int], _Found]:
    def scan(code: str, depth: int = 0) -> _Found:
        marker = "//" if language == "javascript" else "#"
        shells_out = language != "javascript" or "child_process" in code
        out: _Found = []
        for number, raw in enumerate(code.splitlines(), start=1):
            line = _strip_line_comment(raw, marker)
            out += [(number, f) for f in _light_line(line, language, depth, shells_out)]
        return out

    return scan


# ---------------------------------------------------------------- public API

_REVIEWERS: dict[str, Callable[[str, int], _Found]] = {
    "python": _python_findings,
    "shell": _shell_findings,
    "javascript": _light_findings_fn("javascript"),
    "r": _light_findings_fn("r"),
}


def _dedupe(flags: list[Flag]) -> list[Flag]:
    """One flag per (line, category): the most severe, first seen; sorted by line."""
    best: dict[tuple[int, str], Flag] = {}
    for flag in flags:
        key = (flag.line, flag.category)
        if key not in best or _RANK[flag.severity] < _RANK[best[key].severity]:
            best[key] = flag
    return sorted(best.values(), key=lambda f: (f.line, _RANK[f.severity]))


def review(language: str, code: str) -> list[Flag]:
    """Risk flags for ``code`` in ``language``, by line; [] when nothing stands out."""
    lang = normalize_language(language)
    if not code.strip() or lang in ("html", "markdown"):
        return []
    reviewer = _REVIEWERS.get(lang or "")
    if reviewer is None:
        text = (
            f"the language {language!r} is not one oi_kernel reviews, so the code was not reviewed"
        )
        return [Flag(0, "unparseable", MEDIUM, text)]
    try:
        found = reviewer(code, 0)
    except RecursionError:
        return [Flag(0, "unparseable", MEDIUM, "the code is nested too deeply to review")]
    return _dedupe([_flag(line, f) for line, f in found])


def format_flags(flags: list[Flag]) -> str:
    """Compact text for the approval card and the LLM; "" when there are no flags."""
    if not flags:
        return ""
    high = sum(f.severity == HIGH for f in flags)
    head = f"Risk review: {high} high, {len(flags) - high} medium"
    ordered = sorted(flags, key=lambda f: (_RANK.get(f.severity, 2), f.line))
    return "\n".join([head, *(f"- [{f.severity}] {f.category}: {f.reason}" for f in ordered)])
