"""The append-only audit log of a session: one JSON object per line.

Every event the engine records (instructions, LLM requests and replies, proposed
code, decisions, executions) is one line written with a single ``os.write`` on a
file opened with ``O_APPEND``, so a crash or ``SIGKILL`` loses at most the event
being written and ``read_log`` skips that torn last line. Secrets are redacted
before anything reaches the disk. The format is documented in docs/session-log.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import uuid
import warnings
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from oi_kernel.errors import OIError
from oi_kernel.record.records import (
    READS_UP_TO,
    LLMRequestRecord,
    Record,
    as_records,
    parse_record,
)

SCHEMA_VERSION = 1

_HEADER_KEYS = ("v", "seq", "t", "session", "event")


def default_log_dir() -> Path:
    """``$OI_LOG_DIR``, else ``<jupyter data dir>/oi_kernel/logs``."""
    env = os.environ.get("OI_LOG_DIR")
    if env:
        return Path(env).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "oi_kernel" / "logs"


def list_logs(directory: str | Path | None = None) -> list[Path]:
    """The session logs in ``directory`` (default ``default_log_dir()``), oldest first."""
    directory = Path(directory) if directory is not None else default_log_dir()
    if not directory.is_dir():
        return []
    return sorted(directory.glob("*.jsonl"))


def utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds, e.g. 2025-01-31T09:15:02.123Z."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data (dicts with str keys, lists, str, numbers, bool, None).

    Never raises: what JSON can't encode becomes its ``repr``; cycles and absurd
    nesting are cut off at depth 64.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if depth > 64:
        return "<nested too deep>"
    if isinstance(value, dict):
        return {_key(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_jsonable(v, depth + 1) for v in sorted(value, key=repr)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return _jsonable(dataclasses.asdict(value), depth + 1)
        except Exception:  # asdict deep-copies fields; some can't be copied
            return _repr(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return _repr(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else _repr(key)


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:  # a broken __repr__ must not lose the event
        return f"<unrepresentable {type(value).__name__}: {exc!r}>"


class SessionLog:
    """Writes one session's events to ``<dir>/<UTC timestamp>-<session_id>.jsonl``.

    The directory is created with mode 0700 and the file with mode 0600. Safe to
    call from several threads. Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        session_id: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        from oi_kernel.safety.redact import redact_obj  # noqa: F401  (fail now, not on the first write)

        self.session_id = session_id or uuid.uuid4().hex[:12]
        directory = Path(directory) if directory is not None else default_log_dir()
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise OIError(
                f"Cannot create the session log directory {directory}: {exc}\n"
                "Set OI_LOG_DIR to a writable directory."
            ) from exc
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.path = directory / f"{stamp}-{self.session_id}.jsonl"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd: int | None = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise OIError(f"Cannot open the session log {self.path}: {exc}") from exc
        self._secrets = secrets  # read again at every write (a SecretSet follows the env)
        self._extra: set[str] = set()
        self._seq = 0
        self._lock = threading.Lock()

    def add_secrets(self, values: Iterable[str]) -> None:
        """Redact these values too in every later event (empty values are ignored)."""
        self._extra.update(v for v in values if isinstance(v, str) and v)

    def secret_values(self) -> list[str]:
        """What every event is redacted with, longest first."""
        values = {v for v in (*self._extra, *self._secrets) if isinstance(v, str) and v}
        return sorted(values, key=len, reverse=True)

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event and return the record as written (redacted).

        Fields that JSON can't encode are written as their ``repr``. Raises
        ``OIError`` only if the log is closed or the disk write fails.
        """
        from oi_kernel.safety.redact import redact_obj

        body = {k: v for k, v in fields.items() if k not in _HEADER_KEYS}
        body = redact_obj(_jsonable(body), self.secret_values())
        with self._lock:
            if self._fd is None:
                raise OIError(f"The session log {self.path} is closed; event {event!r} lost.")
            self._seq += 1
            record = {
                "v": SCHEMA_VERSION,
                "seq": self._seq,
                "t": utc_now(),
                "session": self.session_id,
                "event": event,
                **body,
            }
            line = json.dumps(record, ensure_ascii=False) + "\n"
            self._write_all(line.encode("utf-8"))
        return record

    def _write_all(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            written = os.write(self._fd, data)  # one call: the whole line, or an error
            while written < len(data):  # only on a short write (disk nearly full)
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            raise OIError(f"Cannot write to the session log {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the file; later ``write`` calls raise ``OIError``. Idempotent."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)


def read_log_report(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of a log and a list of problems (one string per skipped line).

    A torn last line (the writer was killed mid-event) is skipped and reported;
    so is any other line that is not a JSON object. A record from a newer schema
    is kept and reported.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise OIError(f"No session log at {path}.") from None
    except OSError as exc:
        raise OIError(f"Cannot read the session log {path}: {exc}") from exc
    lines = data.split(b"\n")
    torn_tail = lines[-1] != b""  # a complete log ends with "\n"
    if not torn_tail:
        lines.pop()
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            if torn_tail and number == len(lines):
                problems.append(f"line {number}: incomplete last event (writer killed?); skipped")
            else:
                problems.append(f"line {number}: not valid JSON ({exc}); skipped")
            continue
        if not isinstance(record, dict) or "event" not in record:
            problems.append(f"line {number}: not an event object; skipped")
            continue
        if isinstance(record.get("v"), int) and record["v"] > READS_UP_TO:
            problems.append(
                f"line {number}: schema version {record['v']} is newer than this "
                f"oi_kernel reads ({READS_UP_TO}); upgrade oi_kernel"
            )
        records.append(record)
    return records, problems


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The records of a log; skipped lines other than a torn last one raise a warning."""
    records, problems = read_log_report(path)
    serious = [p for p in problems if "incomplete last event" not in p]
    if serious:
        warnings.warn(f"{path}: " + "; ".join(serious), stacklevel=2)
    return records


def read_records_report(path: str | Path) -> tuple[list[Record], list[str]]:
    """``read_log_report`` with typed records (``record.records``); a field of the wrong type
    (read as its default) is a problem too."""
    lines, problems = read_log_report(path)
    records = [parse_record(line) for line in lines]
    problems += [f"event {r.seq}: {defect}" for r in records for defect in r.defects]
    return records, problems


def read_records(path: str | Path) -> list[Record]:
    """``read_log`` with typed records: the readers (export, replay, listings) use these."""
    records, problems = read_records_report(path)
    serious = [p for p in problems if "incomplete last event" not in p]
    if serious:
        warnings.warn(f"{path}: " + "; ".join(serious), stacklevel=2)
    return records


def llm_requests(records: Iterable[Record | dict[str, Any]]) -> list[list[dict]]:
    """The message lists of every ``llm_request`` in ``records`` (typed, or lines), rebuilt
    whole from the incremental form (``messages_before`` + new ``messages``)."""
    requests: list[list[dict]] = []
    previous: list[dict] = []
    for record in as_records(records):
        if isinstance(record, LLMRequestRecord):
            previous = previous[: record.messages_before] + list(record.messages)
            requests.append(previous)
    return requests
