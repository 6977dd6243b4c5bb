"""Shell code, read with ``shlex`` one command at a time: deletes, overwrites, downloads piped
into a shell, privilege, installs, network, environment dumps."""

from __future__ import annotations

import re
from collections.abc import Callable

from oi_kernel.safety.redact import is_secret_name
from oi_kernel.safety.risk.common import (
    _HARMLESS_DEVICES,
    _MAX_DEPTH,
    _ROOT_LIKE,
    HIGH,
    MEDIUM,
    _credential,
    _Finding,
    _Found,
    _is_disk_device,
    _is_system_path,
    _short,
    nested_findings,
)
from oi_kernel.safety.risk.shell_hidden import (
    _SUBST_DECODE,
    _built_at_run_time,
    _computed_command,
    _heredoc_findings,
    _interactive_shell,
    _is_decoder,
    _urls,
)
from oi_kernel.safety.risk.shell_syntax import _Command, _logical_lines, _pipelines, _tokenize
from oi_kernel.safety.risk.shell_words import (
    _DOWNLOADERS,
    _INTERPRETERS,
    _NETWORK,
    _PRIVILEGE,
    _SHELLS,
    _name,
    _strip_prefixes,
)

# ---------------------------------------------------------------- shell: commands

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
    if _built_at_run_time(inner):
        text = f"{name} runs code built at run time (`{_short(inner, 40)}`), which was not reviewed"
        return [_Finding("dynamic-code", HIGH, text)]
    if name.startswith("python"):
        return [f for _, f in nested_findings("python", inner, depth + 1)]
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


def _command_findings(cmd: _Command, depth: int, interactive: bool = False) -> list[_Finding]:
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
        out += _computed_command(name) + _urls(name, words[1:])
        out += _interactive_shell(name, words[1:]) if interactive else []
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
    decoded = [i for i, c in enumerate(pipeline) if _is_decoder(c.words)]
    if shell_at is not None and any(i < shell_at for i in decoded):
        name = _name(pipeline[decoded[0]].words[0])
        text = f"{name} … | {_name(pipeline[shell_at].words[0])} runs decoded text unseen"
        out.append(_Finding("decode-exec", HIGH, text))
    for i, cmd in enumerate(pipeline):
        alone = len(pipeline) == 1 and not any(op.startswith("<") for op, _ in cmd.redirects)
        found = _command_findings(cmd, depth, interactive=alone)
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
    if _SUBST_DECODE.search(text):
        out.append(_Finding("decode-exec", HIGH, "runs text decoded at run time unseen"))
    for pipeline in _pipelines(_tokenize(text)):
        out += _pipeline_findings(pipeline, depth)
    return out


def _heredoc(text: str) -> tuple[str, str] | None:
    """(delimiter, what reads the body: "shell", "python", another interpreter or "data")
    when a line opens a heredoc."""
    match = re.search(r"<<-?\s*['\"]?([A-Za-z_]\w*)['\"]?", text)
    if not match:
        return None
    head = _strip_prefixes(_tokenize(text[: match.start()].split("|")[-1]))
    while head and _name(head[0]) in _PRIVILEGE:
        head = _strip_prefixes(head[1:])
    name = _name(head[0]) if head else ""
    if name in _SHELLS:
        return match.group(1), "shell"
    if name.startswith("python"):
        return match.group(1), "python"
    return match.group(1), name if name in _INTERPRETERS else "data"


def _shell_findings(code: str, depth: int = 0) -> _Found:
    """Findings of a shell script with their 1-based line numbers."""
    out: _Found = []
    lines = code.splitlines()
    skip_until: tuple[str, int] | None = None
    for line, text in _logical_lines(code):
        if skip_until is not None:
            if text.strip() == skip_until[0]:
                skip_until = None
            continue
        out += [(line, f) for f in _line_findings(text, depth)]
        doc = _heredoc(text)
        if doc and doc[1] != "shell":
            out += _heredoc_findings(lines, line, doc, depth)
            skip_until = (doc[0], line)  # a heredoc is data, unless fed to a shell
    return out
