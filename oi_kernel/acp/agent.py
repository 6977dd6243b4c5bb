"""The ACP agent: one ``session.assembly`` session per ACP session, driven by the client.

``session/new`` builds the session (kind "acp": code runs in our child kernel in the
client's cwd; the client's MCP servers join the configured ones under the same approval).
``session/prompt`` runs one instruction, or a line command of the command table when the
text starts with ``/``; the engine's events go to the client as ``session/update``s
(``acp.updates``), in order, before the prompt's response. Approval asks the client with
``session/request_permission`` (``acp.approve``, Edit through a form). ``session/cancel`` cancels the instruction's task, which is
how the kernel interrupts: a step being run interrupts the child, a permission request that
is never answered is abandoned. ``session/load``, ``resume`` and ``fork`` open a session
again from the conversation kept after each prompt (``acp.store``), ``session/list`` lists
those, ``session/close`` stops one session; the model is the session's one config option.
Closing the agent stops every child kernel and MCP server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp import helpers as H
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    CloseSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    UnstructuredCommandInput,
)

from oi_kernel._version import __version__
from oi_kernel.acp import store
from oi_kernel.acp import updates as U
from oi_kernel.acp.approve import ClientApprover
from oi_kernel.acp.servers import add_client_servers, client_servers
from oi_kernel.core import events as E
from oi_kernel.core.types import Turn
from oi_kernel.errors import OIError
from oi_kernel.session import commands as C
from oi_kernel.session import rebuild as _rebuild  # noqa: F401 (registers /rebuild)
from oi_kernel.session.assembly import Session, Wiring, build_session

log = logging.getLogger(__name__)
HIDDEN_COMMANDS = {"display"}  # how a notebook cell streams: nothing to choose in a chat
COMMANDS_DELAY_S = 0.05  # the command list follows the session/new response


class Outbox:
    """The session's updates, sent to the client one after another in the order made
    (an event sink is synchronous; sending is not). ``drain`` waits until all are sent."""

    def __init__(self, conn: Any, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._send_all())

    def put(self, *updates: Any) -> None:
        for update in updates:
            self.queue.put_nowait(update)

    async def drain(self) -> None:
        """Wait until every update put so far is sent (or the outbox is closed)."""
        if self.task.done():
            return
        sent = asyncio.ensure_future(self.queue.join())
        await asyncio.wait({sent, self.task}, return_when=asyncio.FIRST_COMPLETED)
        sent.cancel()

    async def _send_all(self) -> None:
        while True:
            update = await self.queue.get()
            try:
                await self.conn.session_update(session_id=self.session_id, update=update)
            except ConnectionError:  # the client went away: the agent closes on end of input
                pass
            except Exception:  # one update the client could not take: the rest still go
                log.exception("an ACP update could not be sent")
            finally:
                self.queue.task_done()

    def close(self) -> None:
        self.task.cancel()


class AcpSession:
    """One ACP session: our session, its outbox, and the instruction running now."""

    def __init__(self, session_id: str, conn: Any, cwd: str) -> None:
        self.id = session_id
        self.conn = conn
        self.cwd = cwd
        self.outbox = Outbox(conn, session_id)
        self.session: Session | None = None
        self.task: asyncio.Task[Any] | None = None
        self.updates: U.TurnUpdates | None = None  # the running prompt's
        self.models: list[str] = []  # the models this session has used, for the option
        self.can_edit = False  # the client shows forms (elicitation): Edit is offered

    def options(self) -> list[Any]:
        """The session config options (the model) as the client shows them."""
        assert self.session is not None
        model = self.session.llm.model
        self.models = list(dict.fromkeys([*self.models, model] if model else self.models))
        return U.model_options(model, self.models)

    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def document(self) -> dict[str, Any] | None:
        """The conversation as kept (secrets redacted); None before the first instruction."""
        from oi_kernel.record.saved import snapshot, to_document

        if self.session is None or not self.session.engine.conversation.turn_starts:
            return None
        engine = self.session.engine
        return to_document(snapshot(engine), engine.secrets.values())

    def save(self) -> None:
        """Keep the conversation for ``session/load``, ``resume``, ``fork`` and ``list``."""
        if (document := self.document()) is None:
            return
        try:
            store.write(self.id, document, self.cwd)
        except OSError as exc:  # the prompt succeeded; only a later load is lost
            self.say(f"The conversation could not be kept for a later session/load: {exc}")

    def path(self, given: str) -> str:
        """A command's PATH argument: ``~`` expanded, a relative one in the session's cwd
        (never by ``os.chdir``: the sessions share one process)."""
        return os.path.join(self.cwd, os.path.expanduser(given))

    def title(self) -> str:
        """What ``session/list`` calls the session: its first instruction ("" before it)."""
        conversation = self.session.engine.conversation if self.session is not None else None
        return store.title_of(list(conversation.messages), list(conversation.turn_starts)
                              ) if conversation is not None else ""

    def say(self, markdown: str) -> None:
        self.outbox.put(H.update_agent_message_text(markdown.rstrip("\n") + "\n\n"))

    def notice(self, text: str) -> None:
        """A notice of the session outside a turn (a child restarted), as a warning."""
        self.outbox.put(*U.TurnUpdates().updates(E.Notice(text, "warning")))

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task
        session = self.session
        if session is not None:
            await session.close_tools()
            if session.child is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(session.child.shutdown(), 20)
            session.close()
        self.outbox.close()


class OIAgent:
    """The agent side of ACP (the SDK routes the client's requests to these methods)."""

    def __init__(self, parent: Any = None) -> None:
        self.parent = parent  # the configurable whose config applies (oi_kernel_config)
        self.can_edit = False  # the client can show a form (elicitation/create, form mode)
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        forms = getattr(getattr(client_capabilities, "elicitation", None), "form", None)
        self.can_edit = forms is not None
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(), fork=SessionForkCapabilities()),
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True)),
            agent_info=Implementation(name="oi-kernel", title="Open Interpreter",
                                      version=__version__),
            auth_methods=[])

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        state = self._open(new_id(), cwd, mcp_servers)
        return NewSessionResponse(session_id=state.id, config_options=state.options())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        """A session of an earlier agent process, from the conversation kept after each of
        its prompts: the history is sent again, then the session goes on (its variables are
        gone: a new Python kernel runs the code)."""
        state = await self._reopen(session_id, cwd, mcp_servers, history=True)
        return LoadSessionResponse(config_options=state.options())

    async def resume_session(self, session_id: str, cwd: str,
                             mcp_servers: list[Any] | None = None,
                             **kwargs: Any) -> ResumeSessionResponse:
        """``session/load`` without sending the history again (the client has it)."""
        state = await self._reopen(session_id, cwd, mcp_servers, history=False)
        return ResumeSessionResponse(config_options=state.options())

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> ForkSessionResponse:
        """A new session whose conversation starts as ``session_id``'s is now (an open one's
        last finished prompt, else the kept one); the history is not sent again."""
        source = self.sessions.get(session_id)
        try:
            document = source.document() if source is not None and not source.busy() else None
            if document is None and not store.is_kept(session_id):
                raise OIError(f"{session_id!r} has no finished instruction to fork yet: fork "
                              "it after its first prompt." if source is not None else
                              f"no session {session_id!r} to fork: not open here and not kept "
                              f"in {store.directory()}; session/list shows the sessions.")
            document = document or store.read_document(session_id)
        except OIError as exc:
            raise RequestError.invalid_params({"sessionId": str(exc)}) from None
        fork = new_id()
        try:
            store.write(fork, document, cwd)
            state = await self._reopen(fork, cwd, mcp_servers, history=False)
        except OSError as exc:
            raise RequestError.internal_error({"message": f"The fork could not be kept: {exc}"}
                                              ) from None
        except RequestError:
            store.path_of(fork).unlink(missing_ok=True)
            raise
        return ForkSessionResponse(session_id=fork, config_options=state.options())

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """The model picked in the client: as ``/model NAME`` (the next LLM call uses it)."""
        state = self._state(session_id)
        if config_id != U.MODEL_OPTION:
            raise RequestError.invalid_params({"configId": f"no option {config_id!r}: "
                                               f"{U.MODEL_OPTION!r} is the only one (the "
                                               "/commands set the rest)."})
        if not isinstance(value, str) or not value.strip():
            raise RequestError.invalid_params({"value": "send a model's name (a litellm model "
                                               "name such as openai/gpt-4o-mini)."})
        assert state.session is not None
        state.session.llm.model = value.strip()
        return SetSessionConfigOptionResponse(config_options=state.options())

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Cancel the session's instruction, stop its child kernel and MCP servers, end its
        log; its conversation stays kept for a later load, resume or fork."""
        state = self._state(session_id)
        del self.sessions[session_id]
        await state.close()
        state.save()
        return CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """The kept sessions (of ``cwd``, when given), the most recent first, with titles."""
        if cwd is not None and not os.path.isabs(cwd):
            raise RequestError.invalid_params({"cwd": f"{cwd!r} is not an absolute path: send "
                                               "the directory whose sessions to list, or none."})
        try:
            items, after = store.page(store.kept(cwd), cursor)
        except ValueError:
            raise RequestError.invalid_params({"cursor": f"{cursor!r} is not a cursor of this "
                                               "agent: send nextCursor from the last page, or "
                                               "none for the first page."}) from None
        return ListSessionsResponse(next_cursor=after, sessions=[
            SessionInfo(session_id=k.session_id, cwd=k.cwd, title=k.title or None,
                        updated_at=k.updated_at) for k in items])

    async def _reopen(self, session_id: str, cwd: str, mcp_servers: list[Any] | None,
                      history: bool) -> AcpSession:
        """Open a kept session again (load, resume, fork); the history is sent if asked."""
        from oi_kernel.record import saved as cio

        if session_id in self.sessions:
            raise RequestError.invalid_params({"sessionId": f"{session_id!r} is open already: "
                                               "send prompts to it."})
        if not store.is_kept(session_id):
            raise RequestError.invalid_params({"sessionId": f"no saved session {session_id!r} "
                                               f"in {store.directory()}: start one with "
                                               "session/new (session/list shows the saved "
                                               "ones)."})
        state = self._open(session_id, cwd, mcp_servers)
        assert state.session is not None
        try:
            saved = cio.load(state.session.engine, store.path_of(session_id))
        except OIError as exc:
            del self.sessions[session_id]
            await state.close()
            raise RequestError.invalid_params({"sessionId": str(exc)}) from None
        if history:
            state.outbox.put(*U.history_updates(saved.messages))
        state.say(cio.load_message(saved, state.session.llm.model, False, "/"))
        await state.outbox.drain()
        return state

    def _open(self, session_id: str, cwd: str, mcp_servers: list[Any] | None) -> AcpSession:
        path = work_dir(cwd)
        servers = client_servers(mcp_servers or [], str(path))
        state = AcpSession(session_id, self.conn, str(path))
        state.can_edit = self.can_edit
        try:
            state.session = build_session(
                "acp", Wiring(ClientApprover(state), notify=state.notice), parent=self.parent,
                session_id=session_id, child_options={"cwd": str(path)})
        except OIError as exc:
            state.outbox.close()
            raise RequestError.invalid_params({"message": str(exc)}) from None
        if servers:
            add_client_servers(state.session, servers)
        state.session.warm_up()
        if state.session.child is not None:  # it boots while the client is still typing
            state.session.child.start_soon().add_done_callback(_retrieve)
        self.sessions[session_id] = state
        asyncio.get_running_loop().call_later(
            COMMANDS_DELAY_S, state.outbox.put, commands_update(state.session))
        if problems := state.session.config_problems(self.parent):
            asyncio.get_running_loop().call_later(COMMANDS_DELAY_S, state.say, problems)
        return state

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        state = self._state(session_id)
        if state.task is not None and not state.task.done():
            raise RequestError.invalid_request({"message": "This session is still working on "
                                                "the last prompt: wait for it, or send "
                                                "session/cancel first."})
        text = prompt_text(prompt)
        state.updates = None
        untitled = not state.title()
        line = text.strip()
        if line.startswith("/") and line[1:].split(" ", 1)[0] in C.COMMANDS:
            work: Any = self._command(state, line[1:])
        else:
            work = self._instruction(state, text)
        state.task = asyncio.get_running_loop().create_task(work)
        turn: Turn | None = None
        cancelled = False
        try:
            turn = await state.task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the connection is closing: not the client's cancel
            cancelled = True
        except OIError as exc:
            state.outbox.put(*U.TurnUpdates().updates(E.Notice(str(exc), "error")))
        except Exception as exc:  # a fault of ours: the client is told, the agent goes on
            log.exception("the prompt failed")
            state.outbox.put(*U.TurnUpdates().updates(E.Notice(
                f"Internal error: {exc!r} (the agent's stderr has the traceback).", "error")))
        if state.updates is not None:
            state.outbox.put(*state.updates.close_open("interrupted" if cancelled else "failed"))
        state.save()
        if untitled and (title := state.title()):  # the first instruction names the session
            state.outbox.put(U.title_update(title))
        await state.outbox.drain()
        return PromptResponse(stop_reason=U.stop_reason(turn, cancelled),  # type: ignore[arg-type]
                              usage=U.usage(turn))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self.sessions.get(session_id)
        if state is not None and state.task is not None and not state.task.done():
            state.task.cancel()

    async def _instruction(self, state: AcpSession, text: str) -> Turn:
        session = state.session
        assert session is not None
        if not text.strip():
            raise OIError("The prompt is empty: write what you want done.")
        updates = state.updates = U.TurnUpdates()
        session.open_log()  # opened now: a log that cannot be opened fails the prompt
        if session.child is not None:
            session.child.start_soon().add_done_callback(_retrieve)  # boots while the LLM answers
        return await session.engine.run_turn(text, lambda event: _send(state, updates, event))

    async def _command(self, state: AcpSession, line: str) -> None:
        session = state.session
        assert session is not None
        updates = state.updates = U.TurnUpdates()
        ctx = C.CommandContext(session, state.say,
                               lambda: (lambda event: _send(state, updates, event)),
                               path=state.path)
        model = session.llm.model
        try:
            await C.run_command(ctx, line)
        finally:
            if session.llm.model != model:  # /model NAME: the client's picker follows
                state.outbox.put(U.config_update(state.options()))
        return None

    def _state(self, session_id: str) -> AcpSession:
        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id!r} here: "
                                               "start one with session/new."})
        return state

    async def close(self) -> None:
        """Stop every session's instruction, child kernel and MCP servers; close the logs."""
        states, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(s.close() for s in states), return_exceptions=True)


def _send(state: AcpSession, updates: U.TurnUpdates, event: E.Event) -> None:
    for update in updates.updates(event):
        state.outbox.put(update)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background start's failure as seen (it is raised where the child is used)."""
    if not task.cancelled():
        task.exception()


def new_id() -> str:
    return f"acp-{secrets.token_hex(8)}"


def work_dir(cwd: str) -> Path:
    """The session's directory; InvalidParams unless it is absolute and exists."""
    path = Path(cwd or "")
    if not cwd or not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"cwd": f"{cwd!r} is not an absolute path of an "
                                           "existing directory: send the directory the code "
                                           "should run in."})
    return path


def prompt_text(blocks: list[Any]) -> str:
    """The instruction in a prompt's content blocks: text, and the text of embedded
    resources and links as context. Images and audio raise an error that says so."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"(See {block.uri}.)")
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(f"Content of {block.resource.uri}:\n```\n{block.resource.text}\n```")
        else:
            raise RequestError.invalid_params({"prompt": f"a {kind or 'binary'} block cannot be "
                                               "used here: send text (describe the image or "
                                               "name the file instead)."})
    return "\n\n".join(parts)


def commands_update(session: Session) -> Any:
    """The command table as ACP's available commands (``/undo``, ``/export``, ...)."""
    return H.update_available_commands([
        AvailableCommand(name=c.name, description=c.help,
                         input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.usage))
                         if c.usage else None)
        for c in C.available(session) if c.name not in HIDDEN_COMMANDS])
