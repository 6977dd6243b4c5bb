"""Outside sources in shell code, one command at a time through ``shlex``: programs that print
files (``cat``, ``grep``), that fetch (``curl``), and any program not known to print only
names or the machine's own state; output redirected to a file carries nothing."""

from __future__ import annotations

import re
import shlex

from oi_kernel.safety.untrusted.common import UNREADABLE, URL, Source, file_or_url, unique

_SHELL_READERS = frozenset({
    "cat", "head", "tail", "less", "more", "tac", "nl", "strings", "xxd", "od", "hexdump",
    "column", "fold", "fmt", "pr", "paste", "join", "comm", "diff", "zcat", "bzcat", "xzcat",
    "zless", "iconv", "base64", "sort", "uniq", "cut", "tr", "view", "bat", "batcat",
    "pandoc", "pdftotext", "csvlook", "csvcut", "xmllint", "unzip", "zipinfo",
})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "mawk", "sed",
                            "jq", "yq", "zgrep"})
_NETWORK = frozenset({"curl", "wget", "http", "https", "xh", "nc", "ncat", "netcat", "telnet",
                      "ssh", "scp", "sftp", "ftp", "rsync", "git", "gh", "aws", "gsutil",
                      "gcloud", "az", "kubectl", "lynx", "w3m", "links", "aria2c", "dig",
                      "nslookup", "host", "whois", "ping", "traceroute", "openssl"})
# commands whose output is not text from outside (names, sizes, the machine's own state)
_QUIET = frozenset({
    "echo", "printf", "pwd", "ls", "dir", "wc", "date", "whoami", "id", "uname", "hostname",
    "mkdir", "rmdir", "cd", "touch", "cp", "mv", "rm", "ln", "chmod", "chown", "which",
    "type", "command", "true", "false", "sleep", "export", "set", "unset", "alias", "df",
    "du", "free", "nproc", "seq", "test", "[", "[[", "basename", "dirname", "realpath",
    "readlink", "stat", "file", "mktemp", "kill", "exit", "clear", "umask", "tree", "find",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "yes", "expr", "bc", "env",
    "printenv", "ps", "top", "uptime", "lscpu", "nvidia-smi", "locale", "tee", "xargs",
    "shopt", "trap", "wait", "read", "local", "return", "break", "continue", "shift",
    "pushd", "popd", "dirs", "hash", "getconf", "arch", "tty", "stty", "sync", "chgrp",
    "install", "truncate", "dd", "fallocate", "gzip", "gunzip", "bzip2", "xz", "zip", "tar",
})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "{", "}", "(", ")", "!", "time", "sudo", "nohup", "exec", "nice",
                       "timeout", "stdbuf", "command", "builtin"})
_SEPARATORS = frozenset({";", "&&", "||", "&", "\n", "|", "|&", ";;", "(", ")"})


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _tokens(code: str) -> list[str] | None:
    lexer = shlex.shlex(code, posix=True, punctuation_chars=";&|()<>")
    lexer.commenters = "#"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def shell_sources(code: str) -> list[Source]:
    """The outside sources a shell snippet's output (stdout, unless redirected to a file)
    carries."""
    if "$(" in code or "`" in code or "<(" in code or "<<" in code:
        return [Source("program", "", "a command substitution or here-document")]
    found: list[Source] = []
    for line in code.replace("\\\n", " ").split("\n"):
        tokens = _tokens(line)
        if tokens is None:
            return [UNREADABLE]
        found += _line_sources(tokens)
    return unique(found)


def _line_sources(tokens: list[str]) -> list[Source]:
    found: list[Source] = []
    pipeline: list[Source] = []
    command: list[str] = []
    redirected = False

    def end_command() -> None:
        nonlocal command
        pipeline.extend(_command_sources(command))
        command = []

    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in (">&", "<&", "&>&"):  # 2>&1: one stream joins another
            if command and command[-1].isdigit():
                command.pop()
            i += 2
            continue
        if token in (">", ">>", ">|", "&>", "&>>") and i + 1 < len(tokens):
            redirected = redirected or tokens[i + 1] != "&" and not (
                command and command[-1] == "2")
            if command and command[-1] in ("1", "2"):
                command.pop()
            i += 2
            continue
        if token == "<" and i + 1 < len(tokens):
            pipeline.append(_shell_file(tokens[i + 1]))
            i += 2
            continue
        if token in _SEPARATORS:
            end_command()
            if token not in ("|", "|&"):
                if not redirected:
                    found += pipeline
                pipeline, redirected = [], False
            i += 1
            continue
        command.append(token)
        i += 1
    end_command()
    if not redirected:
        found += pipeline
    return found


def _command_sources(words: list[str]) -> list[Source]:
    while words and (words[0] in _KEYWORDS or re.match(r"^[A-Za-z_]\w*=", words[0])):
        words = words[1:]
    if not words or words[0] in ("for", "case", "select", "function"):
        return []
    program = words[0].rsplit("/", 1)[-1]
    args = [w for w in words[1:] if not w.startswith("-")]
    if program in _QUIET:
        return []
    if program in _SHELL_READERS:
        return [_shell_file(a) for a in args]
    if program in _PATTERN_FIRST:
        return [_shell_file(a) for a in args[1:]]
    if program in _NETWORK:
        urls = [a for a in words[1:] if URL.match(a)]
        return [Source("url", u) for u in urls] or [Source("program", program)]
    if program in ("python", "python3", "bash", "sh", "zsh", "node", "Rscript", "perl", "ruby"):
        target = "-c ..." if "-c" in words or "-e" in words else next(
            (a for a in words[1:] if not a.startswith("-")), "")
        return [Source("program", f"{program} {target}".strip()[:60])]
    return [Source("program", program)]


def _shell_file(word: str) -> Source:
    if any(c in word for c in "$*?[{~"):
        return Source("file", "", f"`{word}`")
    return file_or_url(word, "file")


