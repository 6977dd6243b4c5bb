"""Drive a real kernel through jupyter_client, as a frontend would.

``KernelSession`` starts a kernel (the Open Interpreter kernel by default) with
the environment a test wants, runs cells while collecting every iopub message
of the request, answers stdin prompts from a script, and shuts everything down.
"""

from __future__ import annotations

import os
import queue
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import KernelManager


@dataclass
class CellResult:
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["header"]["msg_type"] in types]

    @property
    def stdout(self) -> str:
        return "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stdout"
        )

    @property
    def stderr(self) -> str:
        return "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stderr"
        )

    @property
    def text(self) -> str:
        """Everything shown, as plain text (streams, displays, results, errors). Consecutive
        pieces of one stream are joined as a frontend shows them (a reply printed as text
        arrives in pieces)."""
        parts: list[str] = []
        last_stream = None
        for m in self.messages:
            c = m["content"]
            kind = m["header"]["msg_type"]
            stream = c.get("name") if kind == "stream" else None
            if stream is not None and stream == last_stream:
                parts[-1] += c["text"]
            elif stream is not None:
                parts.append(c["text"])
            elif kind in ("display_data", "update_display_data", "execute_result"):
                parts.append(c["data"].get("text/plain", ""))
            elif kind == "error":
                parts.append("\n".join(c["traceback"]) + f"\n{c['ename']}: {c['evalue']}")
            last_stream = stream
        return "\n".join(parts)


class KernelSession:
    def __init__(
        self,
        kernel_name: str = "open-interpreter",
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        connection_file: str | None = None,
        stderr: Any = None,
        kernel_spec_manager: Any = None,
    ) -> None:
        """``stderr``: a file the kernel process's own stderr (the kernel's log) goes to;
        ``kernel_spec_manager``: where ``kernel_name`` is looked up (a test's own kernelspecs)."""
        self.km = KernelManager(kernel_name=kernel_name, **(
            {"connection_file": connection_file} if connection_file else {}), **(
            {"kernel_spec_manager": kernel_spec_manager} if kernel_spec_manager else {}))
        full_env = {**os.environ, **(env or {})}
        self.km.start_kernel(env=full_env, cwd=cwd,
                             **({"stderr": stderr} if stderr is not None else {}))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=90)

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=False)

    def announce_widgets(self) -> None:
        """Open the widget control comm, as the widget manager of JupyterLab or Notebook 7
        does when it connects: this client renders widgets."""
        self.kc.shell_channel.send(self.kc.session.msg(
            "comm_open", {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control",
                          "data": {}}, metadata={"version": "1.0.0"}))

    def mcp_listing(self, command: str = "%mcp", timeout: float = 90) -> str:
        """``%mcp``'s listing once no server is still starting (an instruction waits at most
        2 s for servers, so on a loaded machine a test asks again until they are up)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.execute(command, timeout=timeout).text
            starting = "— starting" in text or "still starting" in text
            if not starting or time.monotonic() > deadline:
                return text
            time.sleep(0.2)

    def execute(
        self,
        code: str,
        *,
        stdin: Iterable[str] | Callable[[str], str] | None = None,
        timeout: float = 60,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        on_other: Callable[[dict[str, Any]], None] | None = None,
        **kw: Any,
    ) -> CellResult:
        """Run a cell; return its reply and every iopub message it caused."""
        answers = iter(stdin) if stdin is not None and not callable(stdin) else None
        msg_id = self.kc.execute(code, allow_stdin=stdin is not None, **kw)
        result = CellResult(reply={})
        deadline = time.monotonic() + timeout
        idle = False
        while not (idle and result.reply):
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell did not finish in {timeout} s: {code[:80]!r}")
            self._answer_stdin(result, stdin, answers)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                msg = None
            if msg is not None and on_other and msg["parent_header"].get("msg_id") != msg_id:
                on_other(msg)
            if msg is not None and msg["parent_header"].get("msg_id") == msg_id:
                kind = msg["header"]["msg_type"]
                if kind == "status":
                    idle = idle or msg["content"]["execution_state"] == "idle"
                elif kind != "execute_input":
                    result.messages.append(msg)
                    if on_message:
                        on_message(msg)
            if not result.reply:
                try:
                    reply = self.kc.get_shell_msg(timeout=0)
                    if reply["parent_header"].get("msg_id") == msg_id:
                        result.reply = reply
                except queue.Empty:
                    pass
        return result

    def _answer_stdin(self, result: CellResult, stdin: Any, answers: Any) -> None:
        if stdin is None:
            return
        try:
            req = self.kc.get_stdin_msg(timeout=0)
        except queue.Empty:
            return
        prompt = req["content"]["prompt"]
        result.prompts.append(prompt)
        value = stdin(prompt) if callable(stdin) else next(answers, "")
        self.kc.input(value)
