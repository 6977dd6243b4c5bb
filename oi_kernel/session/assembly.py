"""One session, assembled the same way for every front door.

The Open Interpreter kernel, ``%%oi``, the Python API, replay and headless runs differ
only in where code runs and how a decision is asked. Everything else a session is made
of is built here, once: the LLM client, the child kernel and its runner (unless the
front door brings its own executor), the engine, the one ``SecretSet`` that masks output
before the LLM, the session log, saved conversations and exports, the session log itself
(opened lazily, the only place one is opened), the notice when the child restarted, the
configuration problems to show, the start-up profile, and the administrator's policy
(``session.policy``, applied by ``session.policy_rules``).

    session = build_session("kernel", Wiring(card, notify=say), parent=kernel)
    await session.engine.run_turn(text, sink)

A front door hands ``build_session`` one ``Wiring``: how to ask (its approver), how to send
output outside a turn (``notify``), who is asking, how replies stream, and for a child kernel
of ours how its output, its input requests and its protected paths reach the front door.
Nothing is assigned into the session after it is built.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from oi_kernel import config
from oi_kernel._version import __version__
from oi_kernel.core.engine import Engine
from oi_kernel.core.events import ChildRestarted, Event, SessionEnded, SessionStarted
from oi_kernel.core.executor import Approver, Executor
from oi_kernel.errors import OIError
from oi_kernel.record.log_writer import LogWriter
from oi_kernel.safety.redact import SecretSet

Kind = Literal["kernel", "headless", "magic", "api", "replay", "acp"]
SESSION_ID_ENV = "OI_SESSION_ID"
SESSION_KIND_ENV = "OI_SESSION_KIND"
RESTART_NOTICE = "The Python kernel was restarted: variables from before are gone."
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class FrontDoor:
    """What differs between front doors beyond their executor and approver."""

    label: str  # the ``kernel`` field of the log's session_start
    prefix: str  # how its commands are typed: "%" (the kernel) or "%oi " (the magic)
    owns_process: bool  # the kernel's own process: process-wide litellm settings are ours
    profiles: bool  # OI_PROFILE / c.Profile.name apply at start


FRONT_DOORS: dict[str, FrontDoor] = {
    "kernel": FrontDoor("open-interpreter", "%", True, True),
    "headless": FrontDoor("open-interpreter", "%", True, True),
    "magic": FrontDoor("ipython-magic", "%oi ", False, True),
    "api": FrontDoor("api", "", False, False),
    "replay": FrontDoor("replay", "", False, False),
    # ``oi-kernel acp``: an ACP client's chat; its process is ours; commands are "/undo"
    "acp": FrontDoor("acp", "/", True, True),
}


def _silent(text: str) -> None:
    """Notices go nowhere (a front door that shows none: tests, exports)."""


@dataclass(frozen=True)
class Wiring:
    """How a front door talks to its user, handed to ``build_session`` (nothing is assigned
    into the session afterwards).

    - ``approver``: how a decision about a step is asked (a card, stdin, a callback, the
      ACP client's permission request);
    - ``notify``: how text is sent to the user outside a turn (a child restarted, a gateway
      reconnected);
    - ``author``: who is asking through this door when a turn's own request does not say
      (``TurnContext.author``); "" names the process's user (``core.identity``);
    - ``display``: how replies stream ("live", "text" or "auto"; ``%display`` changes it);
    - for a child kernel of ours (the kernel front door): ``forward`` gets its output as it
      comes, ``hold_errors`` keeps a step's error for the view to show, ``on_input`` answers
      its ``input()``, and ``protected_paths`` are never the sandboxed child's to touch.
    """

    approver: Approver
    notify: Callable[[str], None] = _silent
    author: str = ""
    display: str = "auto"
    forward: Callable[[dict[str, Any]], None] | None = None
    hold_errors: bool = False
    on_input: Callable[..., Awaitable[str]] | None = None
    protected_paths: tuple[str, ...] = ()


class Session:
    """A front door's engine and everything around it (see the module docstring)."""

    def __init__(self, kind: Kind, engine: Engine, *, child: Any = None, runner: Any = None,
                 log_dir: str | os.PathLike[str] | None = None, logging: bool = True,
                 session_id: str | None = None, wiring: Wiring | None = None) -> None:
        self.kind = kind
        self.door = FRONT_DOORS[kind]
        self.engine = engine
        self.llm = engine.llm
        self.child = child
        self.runner = runner
        self.secrets: SecretSet = engine.secrets
        self.log_dir = log_dir
        self.logging = logging
        self.session_id = session_id
        self.wiring = wiring or Wiring(engine.steps.approver)
        self.notify: Callable[[str], None] = self.wiring.notify  # the front door shows notices
        self.policy: Any = None  # the administrator's policy (session.policy.Policy)
        self.policy_notices: list[str] = []  # what the policy changed, shown once
        # How replies stream: "live" (updated in place), "text" (printed) or "auto" (live
        # where widgets render); the front door's ``Wiring`` says first, %display changes it.
        self.display = self.wiring.display
        self._log: Any = None
        self._writer: LogWriter | None = None
        self.mcp_error = ""  # why the MCP config could not be used ("" when it could)
        self._config_evaluated = False  # config_problems has read the environment defaults
        self.rebuilding = False  # ``%rebuild`` is replacing a lost child (session.rebuild)
        self.states: Any = None  # the named states (session.states), made on first use

    @property
    def executor(self) -> Executor:
        return self.engine.executor

    # ------------------------------------------------------------ the session log
    @property
    def log(self) -> Any:
        """The session log (None until ``open_log``, or when logging is off)."""
        return self._log

    def open_log(self) -> Any:
        """Open the session log when it is not open yet: install its writer as the
        engine's recorder and record ``SessionStarted`` (the first record). Returns the log,
        None when logging is off. Raises OIError when it cannot be opened."""
        if self._log is None and self.logging:
            from oi_kernel.record.session_log import SessionLog

            log = SessionLog(self.log_dir, self.session_id, secrets=self.secrets)
            writer = LogWriter(log)
            writer(self._started())
            self._log, self._writer = log, writer
            self.engine.recorder = writer
        return self._log

    def _started(self) -> SessionStarted:
        return SessionStarted(
            kernel=self.door.label, model=self.llm.model, cwd=self.executor.cwd,
            oi_version=__version__, python=sys.version.split()[0],
            child_kernel=self.child.kernel_name if self.child is not None else None,
            headless=self.kind == "headless")

    @property
    def log_path(self) -> Path | None:
        return self._log.path if self._log is not None else None

    def publish(self, event: Event) -> None:
        """Record an event of the session (not of a turn: those go through the engine's
        ``recorder``), opening the log when needed (nothing when logging is off). Raises
        when the log cannot be written."""
        if self.open_log() is not None:
            self.engine.recorder(event)

    def close(self) -> None:
        """Record ``SessionEnded`` and close the log (the child is the front door's to
        stop)."""
        log, self._log = self._log, None
        writer, self._writer = self._writer, None
        self.engine.recorder = None
        self.engine.rollback.forget_saved_files()
        if log is not None and not log.closed:
            try:
                (writer or LogWriter(log))(SessionEnded())
            finally:
                log.close()

    # ------------------------------------------------------------ the child kernel
    def child_restarted(self, reason: str = "the previous child kernel died") -> None:
        """The runner started a new child: record it and tell the user."""
        self.publish(ChildRestarted(reason))
        self.notify(RESTART_NOTICE if self.rebuilding else self.restart_notice())

    def restart_notice(self) -> str:
        """The variables are gone, and (where commands are typed and a log is kept) how
        ``%rebuild`` brings them back (``session.rebuild``)."""
        if not (self.logging and self.door.prefix and self.child is not None):
            return RESTART_NOTICE
        p = self.door.prefix
        return (f"{RESTART_NOTICE} `{p}rebuild` re-runs the recorded code that built them "
                f"(`{p}rebuild --dry-run` lists it first).")

    async def restart_child(self, reason: str, *, wait: bool = False, **fields: Any) -> None:
        """Stop the child and start a new one (its variables are lost), recorded in the log.
        ``wait``: until it runs (a failure to start raises here); else a failure is reported
        where the child is next used."""
        if self.child is None:
            raise OIError("Code runs in this IPython kernel here: there is no Python kernel of "
                          "ours to restart. Use IPython's own restart.")
        await self.child.shutdown()
        self.publish(ChildRestarted(reason, fields))
        starting = self.child.start_soon()
        if wait:
            await starting
        else:
            starting.add_done_callback(lambda t: t.cancelled() or t.exception())

    # ------------------------------------------------------------ configuration
    def config_problems(self, *also: Any) -> str:
        """The settings that were rejected (bad environment or config values), as text to
        show once; "" when there are none. Evaluates the environment defaults the first
        time (every cell, it cost ~0.2 ms of each round trip: benchmarks/overhead.py)."""
        if not self._config_evaluated:
            self._config_evaluated = True
            for obj in (*also, self.engine, self.llm, self.child):
                if obj is not None:
                    try:
                        obj.trait_values(config=True)
                    except Exception:  # a broken default is reported by its own check
                        pass
        problems = config.take_warnings()
        text = ""
        if problems:
            text = ("Configuration problems (the defaults are used instead):\n"
                    + "".join(f"- {p}\n" for p in problems))
        notices, self.policy_notices = self.policy_notices, []
        if notices:
            text += ("The administrator's policy applies:\n"
                     + "".join(f"- {n}\n" for n in notices))
        return text

    def warm_up(self) -> None:
        """Start importing litellm (and the MCP SDK, when servers are configured) in the
        background (seconds): the first request need not wait for them."""
        from oi_kernel.llm.boundary import warm_up

        warm_up(hosted=not getattr(self.llm, "is_embedded", False))
        from oi_kernel.session.tools import mcp_provider

        if mcp_provider(self) is not None:
            import threading

            from oi_kernel.execution.mcp.connection import load_sdk

            def load() -> None:
                try:
                    load_sdk()
                except Exception:  # reported when a server is started
                    pass

            threading.Thread(target=load, name="oi-mcp-import", daemon=True).start()
            self.start_tools_soon()

    def start_tools_soon(self, delay: float = 2.0) -> None:
        """Start the MCP servers in the background a little later (when a loop runs here:
        the kernel's), so the first instruction need not wait for them."""
        import asyncio

        from oi_kernel.session.tools import mcp_provider

        hub = mcp_provider(self)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if hub is not None:
            loop.call_later(delay, hub.start_soon)

    async def close_tools(self, timeout: float = 8.0) -> None:
        """Stop the MCP servers (bounded)."""
        import asyncio

        from oi_kernel.session.tools import mcp_provider

        hub = mcp_provider(self)
        if hub is not None:
            try:
                await asyncio.wait_for(hub.close(), timeout)
            except Exception:  # shutting down: the servers die with us anyway
                pass


def build_session(
    kind: Kind,
    wiring: Wiring | None = None,
    *,
    approver: Approver | None = None,
    parent: Any = None,
    executor: Executor | None = None,
    llm: Any = None,
    child_options: dict[str, Any] | None = None,
    engine_options: dict[str, Any] | None = None,
    runner_options: dict[str, Any] | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    logging: bool = True,
    session_id: str | None = None,
    policy: Any = None,
) -> Session:
    """Assemble a session for a front door (see the module docstring).

    ``wiring``: how the front door talks to its user (``approver=`` alone is short for
    ``Wiring(approver)``). ``parent`` is the configurable whose config applies (the kernel,
    the magics). Without ``executor`` the code runs in a child kernel (``child_options``
    for ``ChildKernel``, ``runner_options`` for ``ChildRunner``: ``timeout``).
    ``policy`` replaces the administrator's policy files (tests). Options that would
    lower the policy raise ``PolicyError``.
    """
    from oi_kernel.session import policy_rules
    from oi_kernel.session.policy import load_policy

    if wiring is None:
        if approver is None:
            raise TypeError("build_session needs the front door's Wiring (or an approver)")
        wiring = Wiring(approver)
    policy = load_policy() if policy is None else policy
    if kind == "replay" and policy.log_dir:
        logging = True  # replaying runs code: it is logged like any session
    policy_rules.check_keywords(policy, engine_options, child_options, logging)
    notices: list[str] = []
    llm = _model(kind, llm, parent)
    session_ref: list[Session] = []
    child = runner = None
    if executor is None:
        child, runner = _child(parent, wiring, policy_rules.gateway_choice(policy, notices),
                               log_dir if logging else None, logging, session_ref,
                               child_options, runner_options)
        executor = runner
    if parent is not None and getattr(parent, "log", None) is not None:
        engine_options = {"log": parent.log, **(engine_options or {})}  # (its parts log there)
    engine = Engine(executor=executor, approver=wiring.approver, parent=parent, llm=llm,
                    author=wiring.author, **(engine_options or {}))
    session = Session(kind, engine, child=child, runner=runner, log_dir=log_dir,
                      logging=logging, session_id=session_id or _session_id_from_env(kind),
                      wiring=wiring)
    session_ref.append(session)
    session.policy_notices = notices + policy_rules.enforce(session, policy)
    _finish(session, kind, engine, child)
    return session


def _model(kind: Kind, llm: Any, parent: Any) -> Any:
    """The front door's model, or a new ``LLM`` (whose process-wide litellm settings are
    ours to set when the front door owns the process)."""
    if FRONT_DOORS[kind].owns_process:
        from oi_kernel.llm.boundary import own_process

        own_process()
    if llm is None:
        from oi_kernel.llm.client import LLM

        llm = LLM(parent=parent)
    return llm


def _child(parent: Any, wiring: Wiring, choose: Any, log_dir: Any, logging: bool,
           session_ref: list[Session], child_options: dict[str, Any] | None,
           runner_options: dict[str, Any] | None) -> tuple[Any, Any]:
    """The child kernel (not started) and its runner, wired to the front door; a child
    that restarts tells the session (``session_ref``: the session, once built)."""
    from oi_kernel.execution.placement import new_child_kernel
    from oi_kernel.execution.runner import ChildRunner

    child = new_child_kernel(parent, choose_gateway=choose, **(child_options or {}))
    child.protected_paths.extend(wiring.protected_paths)
    if logging:  # the audit log is never the sandboxed child's to read or change
        from oi_kernel.record.session_log import default_log_dir

        child.protected_paths.append(str(log_dir or default_log_dir()))
    child.on_input = wiring.on_input
    if hasattr(child, "notify"):  # a gateway child says when it reconnected
        child.notify = lambda text: session_ref[0].notify(text)
    runner = ChildRunner(child, on_restart=lambda: session_ref[0].child_restarted(),
                         forward=wiring.forward, **(runner_options or {}))
    runner.hold_errors = wiring.hold_errors
    return child, runner


def _finish(session: Session, kind: Kind, engine: Engine, child: Any) -> None:
    """The start-up profile (OI_PROFILE / c.Profile.name) and the MCP servers (which start
    later, in the background)."""
    if FRONT_DOORS[kind].profiles:
        from oi_kernel.session.profile_state import apply_startup

        apply_startup(engine, child=child)
    if kind != "replay":
        from oi_kernel.session.tools import attach_mcp

        attach_mcp(session)


def _session_id_from_env(kind: Kind) -> str | None:
    """The id a headless runner chose for the kernel it starts (so it finds the log; the
    ``%%oi`` magic in a python3 notebook run headless too)."""
    if kind not in ("kernel", "headless", "magic"):
        return None
    value = os.environ.get(SESSION_ID_ENV, "").strip()
    if value and not _SESSION_ID_RE.match(value):
        config.warn(f"{SESSION_ID_ENV}={value!r} is not a session id (letters, digits, _ and -, "
                    "up to 64); a new one is used.")
        return None
    return value or None


def kernel_kind() -> Kind:
    """"headless" when ``oi-kernel run`` started this kernel, else "kernel"."""
    return "headless" if os.environ.get(SESSION_KIND_ENV) == "headless" else "kernel"


def secret_set(llm: Any, extra: Iterable[str] = ()) -> SecretSet:
    """The secrets of a session whose engine is not built here (exports of a log)."""
    return SecretSet(llm, extra)
