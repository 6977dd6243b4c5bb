"""Save and load the conversation (``%save``, ``%load``).

The conversation is the engine's message list: exactly what follows the system
prompt in every LLM request, plus the index of each instruction in it. Saved as
JSON with a format version, the model and the code steps that ran (what the
user approved, edited or not), so ``%load --replay`` can rebuild the Python
state by running that code again, each step through the usual approval.
Secrets are redacted (the session's ``SecretSet``) before anything is written.
Loading changes only what the model sees: whatever the code did in the Python
kernel stays.

The functions on message lists are pure; ``save`` and ``load`` apply them to an
engine's ``Conversation`` and do the file I/O.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from oi_kernel.core.conversation import check_messages, check_turn_starts
from oi_kernel.core.events import ConversationLoaded, ConversationSaved
from oi_kernel.core.types import CodeBlock, ToolCall, code_hash
from oi_kernel.errors import OIError

FORMAT = "oi-conversation"
VERSION = 1
DEFAULT_PATH = "oi-conversation.json"
REBUILD_STATUSES = ("ok", "unknown")  # steps that ran cleanly (or may have: hand-made files)


class ConversationFileError(OIError):
    """A saved conversation could not be written or read."""


@dataclass
class SavedConversation:
    """A conversation as stored in a file."""

    messages: list[dict[str, Any]]
    turn_starts: list[int]
    model: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    saved_at: str = ""
    path: Path | None = None

    @property
    def turns(self) -> int:
        return len(self.turn_starts)


# ----------------------------------------------------------------------------- pure
def proposed_blocks(
    messages: list[dict[str, Any]], starts: list[int]
) -> list[tuple[int, CodeBlock]]:
    """(turn number, block) for every code block the assistant proposed, in order."""
    from oi_kernel.core.codeblocks import blocks_from_tool_calls, extract_code_blocks

    found = []
    for index, msg in enumerate(messages):
        if msg.get("role") != "assistant":
            continue
        turn = sum(1 for s in starts if s <= index)
        calls = msg.get("tool_calls") or []
        if calls:
            tool_calls = [
                ToolCall(
                    str(c.get("id") or ""),
                    str(c.get("function", {}).get("name")),
                    str(c.get("function", {}).get("arguments") or ""),
                )
                for c in calls
            ]
            blocks, _problems = blocks_from_tool_calls(tool_calls)
        elif isinstance(msg.get("content"), str):
            blocks = extract_code_blocks(msg["content"])
        else:
            blocks = []
        found += [(turn, b) for b in blocks]
    return found


def step_key(block: CodeBlock) -> str:
    """How a proposed block is matched with what happened to it: its tool call id, else the
    hash of its code (markdown mode has no ids)."""
    return f"id:{block.tool_call_id}" if block.tool_call_id else f"sha256:{code_hash(block.code)}"


def conversation_steps(
    messages: list[dict[str, Any]], starts: list[int], outcomes: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each proposed step with what ran (``outcomes[step_key]``: code and status), or the
    proposed code with status "unknown" when nothing is known about it."""
    steps = []
    for turn, block in proposed_blocks(messages, starts):
        outcome = outcomes.get(step_key(block), {})
        steps.append(
            {
                "turn": turn,
                "key": step_key(block),
                "language": block.language,
                "code": outcome.get("code", block.code),
                "status": outcome.get("status", "unknown"),
            }
        )
    return steps


def outcomes_from_turns(turns: list[Any]) -> dict[str, dict[str, Any]]:
    """What happened to each step of the engine's turns: the code that ran (after an edit)
    and its status (ok, error, skipped, ...). Later turns win."""
    outcomes: dict[str, dict[str, Any]] = {}
    for turn in turns:
        for record in turn.steps:
            decision = record.decision
            ran = decision is not None and decision.action == "run"
            outcomes[step_key(record.block)] = {
                "code": decision.code if ran else record.block.code,
                "status": record.status,
            }
    return outcomes


def to_document(saved: SavedConversation, secrets: list[str]) -> dict[str, Any]:
    """The JSON document of a conversation, secrets redacted."""
    from oi_kernel._version import __version__
    from oi_kernel.safety.redact import redact_obj

    return redact_obj(
        {
            "format": FORMAT,
            "version": VERSION,
            "saved_at": saved.saved_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "oi_version": __version__,
            "model": saved.model,
            "turn_starts": saved.turn_starts,
            "messages": saved.messages,
            "steps": saved.steps,
        },
        secrets,
    )


def from_document(doc: Any, where: str = "The file") -> SavedConversation:
    """A conversation from its JSON document; a ConversationFileError says what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConversationFileError(f"{where} is not a saved conversation (made by %save).")
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ConversationFileError(
            f"{where} has format version {version!r}; this oi_kernel reads up to {VERSION}. "
            "Upgrade oi_kernel to load it."
        )
    messages, starts = doc.get("messages"), doc.get("turn_starts")
    _check(messages, starts, where)
    steps = doc.get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ConversationFileError(f"{where}: 'steps' must be a list of objects.")
    return SavedConversation(
        messages, starts, str(doc.get("model") or ""), steps, str(doc.get("saved_at") or "")
    )


def _check(messages: Any, starts: Any, where: str) -> None:
    try:
        check_messages(messages)
        check_turn_starts(starts, messages)
    except ConversationFileError:
        raise
    except OIError as exc:
        raise ConversationFileError(f"{where}: {exc}") from None


def rebuild_blocks(saved: SavedConversation) -> list[CodeBlock]:
    """The code steps to run again to rebuild the Python state: those that ran without error."""
    return [
        CodeBlock(str(s.get("language") or "python"), str(s.get("code") or ""))
        for s in saved.steps
        if s.get("status") in REBUILD_STATUSES and str(s.get("code") or "").strip()
    ]


# ----------------------------------------------------------------------------- engine + files

def snapshot(engine: Any) -> SavedConversation:
    """The engine's conversation as it would be saved (not yet redacted)."""
    outcomes = {**engine.conversation.loaded_outcomes, **outcomes_from_turns(engine.turns)}
    conversation = engine.conversation
    messages, starts = list(conversation.messages), list(conversation.turn_starts)
    return SavedConversation(
        messages, starts, engine.llm.model, conversation_steps(messages, starts, outcomes)
    )


def save(engine: Any, path: str | Path, force: bool = False) -> SavedConversation:
    """Write the engine's conversation to ``path`` (JSON, secrets redacted)."""
    target = Path(path).expanduser()
    if target.exists() and not force:
        raise ConversationFileError(f"{target} exists. Add --force to overwrite it.")
    saved = snapshot(engine)
    doc = to_document(saved, engine.secrets.values())
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConversationFileError(f"Could not write {target}: {exc}") from exc
    saved.path = target
    engine.publish(ConversationSaved(str(target), saved.turns))
    return saved


def read(path: str | Path) -> SavedConversation:
    """A saved conversation from a file."""
    source = Path(path).expanduser()
    try:
        doc = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConversationFileError(f"No file {str(source)!r}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversationFileError(f"Could not read {source}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConversationFileError(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})."
        ) from exc
    saved = from_document(doc, str(source))
    saved.path = source
    return saved


def load(engine: Any, path: str | Path) -> SavedConversation:
    """Replace the engine's conversation with the one saved in ``path``."""
    saved = read(path)
    engine.conversation.replace(saved.messages, saved.turn_starts)
    engine.conversation.loaded_outcomes = {
        str(s["key"]): {"code": s.get("code", ""), "status": s.get("status", "unknown")}
        for s in saved.steps
        if s.get("key")
    }
    engine.publish(ConversationLoaded(str(saved.path), saved.turns, len(saved.messages)))
    return saved


def load_message(saved: SavedConversation, model: str, replay: bool, prefix: str = "%") -> str:
    """What to tell the user after a load (markdown); ``prefix`` is how commands are typed."""
    text = (
        f"Loaded {saved.turns} instruction{'s' if saved.turns != 1 else ''} "
        f"({len(saved.messages)} messages) from `{saved.path}`; it replaces the conversation."
    )
    if saved.model and saved.model != model:
        text += f" It was saved with model `{saved.model}` (now `{model}`: `{prefix}model` switches)."
    count = len(rebuild_blocks(saved))
    if replay:
        text += f" Replaying {count} code step{'s' if count != 1 else ''} to rebuild the state."
    elif count:
        text += (
            f" **Variables are not restored**: the Python kernel does not have what that "
            f"code made. `{prefix}load {saved.path} --replay` runs its {count} code "
            f"step{'s' if count != 1 else ''} again, each asking for approval."
        )
    return text
