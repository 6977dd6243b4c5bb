"""``oi-kernel replay``: re-run a session log through an Interpreter whose LLM answers with
the logged replies (``RecordedLLM``) and whose approver repeats the logged decisions, in a
fresh child kernel, and compare every step with what was recorded (``record.replay``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from oi_kernel.api.interpreter import Interpreter
from oi_kernel.core.types import CodeBlock, Decision, StepRecord
from oi_kernel.errors import OIError, PolicyError
from oi_kernel.llm.recorded import RecordedLLM
from oi_kernel.record.claims_cells import answer_replayed
from oi_kernel.record.records import (
    AnswerCheckRecord,
    ConversationResetRecord,
    DirectRecord,
    Record,
    SessionStartRecord,
)
from oi_kernel.record.replay import (
    _CAPS,
    _CUT_SHORT,
    RecordedApprover,
    RecordedSession,
    RecordedTools,
    RecordedTurn,
    ReplayReport,
    StepCheck,
    _turn_checks,
    compare_step,
    parse_session,
)


def replay_log(
    log_path: str | Path,
    *,
    cwd: str | Path | None = None,
    in_place: bool = False,
    kernel_name: str | None = None,
    timeout: float = 120,
) -> ReplayReport:
    """Re-run the session in ``log_path`` in a fresh child kernel and compare each step.

    It runs in a temporary copy of ``cwd`` (default: the session's recorded working
    directory when it still exists, else an empty directory); ``in_place=True``
    runs in ``cwd`` itself. ``timeout`` is the seconds one step may run before it
    is interrupted. Nothing is sent to any LLM.
    """
    from oi_kernel.record.session_log import read_records

    records = read_records(log_path)
    session = parse_session(records)
    if not session.timeline:
        raise OIError(
            f"{log_path} holds no instructions to replay; is it an oi_kernel session log?"
        )
    start = session.header or SessionStartRecord()
    recorded_cwd = start.cwd
    source = Path(cwd).expanduser().resolve() if cwd else _existing(recorded_cwd)
    kernel = kernel_name or start.child_kernel or "python3"
    if in_place:
        if source is None:
            raise OIError("in_place needs a directory: pass cwd (--cwd).")
        return _replay(session, source, kernel, timeout, log_path, {recorded_cwd, str(source)},
                       records)
    with tempfile.TemporaryDirectory(prefix="oi-replay-") as tmp:
        workdir = Path(tmp) / ((source.name if source else "") or "work")
        if source is not None:
            from oi_kernel.record.verify import _copy_dir

            _copy_dir(source, workdir)
        workdir.mkdir(exist_ok=True)
        roots = {recorded_cwd, str(source or ""), str(workdir), os.path.realpath(workdir)}
        return _replay(session, workdir, kernel, timeout, log_path, roots, records)


def _existing(path: str) -> Path | None:
    return Path(path) if path and Path(path).is_dir() else None


def _replay(
    session: RecordedSession,
    workdir: Path,
    kernel: str,
    timeout: float,
    log_path: str | Path,
    roots: set[str],
    records: list[Record] = (),  # type: ignore[assignment]
) -> ReplayReport:
    model = session.header.model if session.header is not None else ""
    llm = RecordedLLM(model=model or "recorded", api_key="")
    approver = RecordedApprover()
    report = ReplayReport(log=str(log_path), workdir=str(workdir))
    root_list = sorted(r for r in roots if r)
    with Interpreter(
        session_kind="replay",
        llm=llm,
        approve=approver.decide,
        kernel_name=kernel,
        cwd=workdir,
        timeout=timeout,
        log=False,
    ) as it:
        tools = RecordedTools(list(records))
        it.engine.toolbox.providers.append(tools)  # MCP results as recorded: no server
        it.engine.toolbox.functions.update(tools.functions)
        for cap in _CAPS:  # the recording's own caps show as where its turns ended
            if it.engine.has_trait(cap):
                with contextlib.suppress(PolicyError):  # an administrator's cap stays
                    setattr(it.engine, cap, 0)
        answers = {r.turn: r for r in records if isinstance(r, AnswerCheckRecord)}
        for action in session.timeline:
            if isinstance(action, RecordedTurn):
                report.checks += _replay_turn(it, action, llm, approver, root_list)
                if (row := answer_replayed(answers.get(action.index), it.turns[-1]
                                           if it.turns else None)) is not None:
                    report.answers.append(StepCheck(action.index, "answer", *row))
            elif isinstance(action, DirectRecord):
                report.checks.append(_replay_direct(it, action, root_list))
            elif isinstance(action, ConversationResetRecord):
                it.reset()
            else:  # a restart someone asked for
                it.restart()
    return report


def _replay_turn(
    it: Any, recorded: RecordedTurn, llm: RecordedLLM, approver: RecordedApprover, roots: list[str]
) -> list[StepCheck]:
    llm.begin_turn(recorded)
    approver.turn = recorded
    count = len(recorded.replies)
    with contextlib.suppress(PolicyError):  # an administrator's max_steps stays
        it.max_steps = max(1, count if recorded.end_reason in _CUT_SHORT else count + 1)
    before = len(it.turns)
    error: BaseException | None = None
    try:
        for _chunk in it.chat(recorded.instruction):
            pass
    except OIError as exc:
        error = exc
    turn = it.turns[-1] if len(it.turns) > before else None
    return _turn_checks(recorded, turn, error, llm, approver, roots)


def _replay_direct(it: Any, record: DirectRecord, roots: list[str]) -> StepCheck:
    code = record.code
    result = it.run_code(code)
    new = StepRecord(0, CodeBlock("python", code), Decision("run", code),
                     result.status, result.outputs)  # type: ignore[arg-type]
    status, detail = compare_step(record, new, roots)
    return StepCheck(None, "direct", status, detail)
