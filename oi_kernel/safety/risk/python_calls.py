"""The calls the Python review knows by name: shell-outs, deletes, moves, signals,
permissions, network modules, environment reads and dumps, file opens."""

from __future__ import annotations

import re

from oi_kernel.safety.risk.common import HIGH, MEDIUM

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
    "xmlrpc.client",
    "pycurl",
    "httplib2",
    "boto3",
    "botocore",
    "grpc",
    "pysftp",
    "fabric",
    "asyncssh",
    "scapy",
    "tornado.httpclient",
    "wget",
    "gdown",
    "webbrowser",
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


def risky_call(qual: str) -> str | None:
    """"shell" for a shell-out (``os.system``), "other" for another call the review flags by
    name (a delete, a move, a signal, the network…), else None."""
    if qual in _SHELL_CALLS or qual.startswith(_SHELL_PREFIXES):
        return "shell"
    named = set(_DELETE_CALLS) | _MOVE_CALLS | _KILL_CALLS | _PERMISSION_CALLS | _PRIVILEGE_CALLS
    network = any(qual == m or qual.startswith(m + ".") for m in _NETWORK_MODULES)
    return "other" if qual in named or network or qual.split(".")[0] in ("pty", "pip") else None
