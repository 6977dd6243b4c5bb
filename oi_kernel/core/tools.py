"""Tools beyond code: what the model is offered next to ``execute``, and how a call to
one becomes a step.

Two kinds of tool reach the model:

* tools of MCP servers (``oi_kernel.execution.mcp``), a ``ToolProvider``: a call is a
  *tool step* (a ``CodeBlock`` with ``tool`` set, its code the JSON arguments) that goes
  through the same approval, limits, log and export as code, and runs on the server;
* the notebook's own functions (``%tool NAME``): a call becomes ordinary Python code
  (``add_tax(amount=10)``) run in the kernel, so it is reviewed, approved, logged and
  exported exactly like code the model wrote.

The offered set stays within a token budget: tools that do not fit are reached through
two small meta-tools, ``mcp_find`` (search them) and ``mcp_call`` (call one by name).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from traitlets import Float, Unicode

from oi_kernel import config
from oi_kernel.core import codeblocks
from oi_kernel.core.codeblocks import ToolArgumentsError
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.types import CodeBlock
from oi_kernel.safety.risk import HIGH, MEDIUM, Flag

FIND, CALL = "mcp_find", "mcp_call"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Tools(config.Remembered):
    """Settings of the tools offered beside code (``c.Tools.*``). The resolver's environment
    step reads ``OI_TOOL_BUDGET``; ``OI_MCP_CONFIG`` and ``OI_MCP_PINS`` are read where the
    files are found (``execution.mcp``), beside these settings, not as their values."""

    mcp_config = Unicode(
        "", config=True,
        help="Path of an MCP config file ({\"mcpServers\": {...}}), read after $OI_MCP_CONFIG "
        "and before mcp.json in the Jupyter config directories.").tag(env="OI_MCP_CONFIG", env_kind="elsewhere")
    budget_fraction = Float(
        0.05, config=True,
        help="Share of the model's context window the offered MCP tool definitions may take "
        "per request (at least 1,500 tokens); tools beyond it are reached with mcp_find / "
        "mcp_call. Env: OI_TOOL_BUDGET.").tag(env="OI_TOOL_BUDGET", env_min=0.0)
    call_timeout = Float(
        60.0, config=True,
        help="Seconds an MCP tool call may take (a server's \"timeout\" key overrides it).")
    connect_timeout = Float(
        30.0, config=True,
        help="Seconds an MCP server may take to start and list its tools.")
    ready_wait = Float(
        2.0, config=True,
        help="Seconds an instruction waits for MCP servers that are still starting; the "
        "model gets the tools that are ready and a notice names the others.")
    pin_file = Unicode(
        "", config=True,
        help="The file that keeps the MCP tool descriptions you approved (pins), shared by "
        "your sessions. Default: mcp-pins.json in the Jupyter data directory's oi_kernel "
        "folder. Env: OI_MCP_PINS.").tag(env="OI_MCP_PINS", env_kind="elsewhere")

    def freeze(self) -> Any:
        """These settings now (a ``ToolSettings``), frozen: what a turn uses."""
        return config.freeze_into(ToolSettings, self)


ToolSettings = config.frozen_class(
    Tools, "ToolSettings", __name__,
    "The tools' settings as one turn uses them: every ``c.Tools.*`` trait, read once when the "
    "turn starts (``Tools.freeze``, part of the engine's ``TurnSettings``).")



@dataclass
class ToolSpec:
    """One tool as the model sees it, and where a call goes."""

    name: str  # as offered: unique and valid for every provider
    description: str
    parameters: dict[str, Any]
    kind: str = "mcp"  # "mcp", "function" (a notebook function), "meta" (mcp_find)
    server: str = ""
    tool: str = ""  # the server's own name for it
    read_only: bool = False
    destructive: bool = False
    tokens: int = 0
    # What the provider found about the tool's own text: (severity, category, reason) for
    # each risk flag its cards carry (a poisoned description, a description that changed
    # since it was approved). Kept up to date by the provider, in place.
    trust: list[tuple[str, str, str]] = field(default_factory=list)
    fingerprint: str = ""  # the hash of the version shown (what approving it pins)

    @property
    def label(self) -> str:
        if self.kind == "mcp":
            return f"{self.server} › {self.tool}"
        return self.name

    def definition(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


class ToolProvider(Protocol):
    """Tools that run outside the code's kernel (MCP servers)."""

    async def prepare(self) -> list[str]:
        """Start what is needed (bounded); returns notices for the user."""
        ...

    def specs(self) -> list[ToolSpec]:
        """Every tool available now, in a stable order."""
        ...

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], timeout: float) -> ExecResult:
        ...


def parse_arguments(raw: str | dict[str, Any]) -> dict[str, Any]:
    """A call's arguments as a dict; ToolArgumentsError saying what is wrong."""
    if isinstance(raw, dict):
        return raw
    text = (raw or "").strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolArgumentsError(f"the arguments are not valid JSON ({exc.msg} at "
                                 f"character {exc.pos}): {text[:200]}") from None
    if not isinstance(value, dict):
        raise ToolArgumentsError("the arguments must be a JSON object of named arguments.")
    return value


def call_code(function: str, arguments: dict[str, Any]) -> str:
    """Python for calling a notebook function with JSON arguments: ``f(a=1, b='x')``."""
    bad = [k for k in arguments if not _IDENT.match(str(k))]
    if bad:
        raise ToolArgumentsError(f"argument names must be Python identifiers: {bad}")
    parts = [f"{k}={_py_literal(v)}" for k, v in arguments.items()]
    return f"{function}({', '.join(parts)})"


def _py_literal(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py_literal(str(k))}: {_py_literal(v)}"
                               for k, v in value.items()) + "}"
    return repr(str(value))


@dataclass
class Offer:
    """What one request offers, and the lookup of every name the model may call."""

    definitions: list[dict[str, Any]] = field(default_factory=list)
    routes: dict[str, ToolSpec] = field(default_factory=dict)  # every callable name
    hidden: int = 0  # tools reachable only through mcp_find / mcp_call


class Toolbox:
    """The tools of a session: MCP providers and notebook functions."""

    def __init__(self) -> None:
        self.providers: list[ToolProvider] = []
        self.functions: dict[str, ToolSpec] = {}
        self.builtin: dict[str, ToolSpec] = {}  # the session's own (edit_cell: kind "edit")
        self.last_offer = Offer()

    def __bool__(self) -> bool:
        return bool(self.providers or self.functions or self.builtin)

    async def prepare(self) -> list[str]:
        notices: list[str] = []
        for provider in self.providers:
            notices += await provider.prepare()
        return notices

    def all_specs(self) -> list[ToolSpec]:
        specs = [*self.functions.values(), *self.builtin.values()]
        for provider in self.providers:
            specs += provider.specs()
        return specs

    def offer(self, budget_tokens: int) -> Offer:
        """The definitions for the next request: notebook functions, then MCP tools in a
        stable order while they fit ``budget_tokens``; the rest behind mcp_find/mcp_call."""
        offer = Offer()
        specs = self.all_specs()
        for spec in specs:
            offer.routes[spec.name] = spec
        total = sum(s.tokens for s in specs)
        if total <= budget_tokens:
            offer.definitions = [s.definition() for s in specs]
        else:
            used = META_TOKENS
            for spec in specs:
                if spec.kind in ("function", "edit") or used + spec.tokens <= budget_tokens:
                    offer.definitions.append(spec.definition())
                    used += spec.tokens
                else:
                    offer.hidden += 1
            offer.definitions += [meta_find(offer.hidden), meta_call()]
        self.last_offer = offer
        return offer

    def find(self, query: str, limit: int = 8) -> list[ToolSpec]:
        """Tools whose name or description matches the words of ``query``, best first."""
        words = [w for w in re.split(r"\W+", query.lower()) if w]
        scored = []
        for n, spec in enumerate(self.last_offer.routes.values()):
            text = f"{spec.name} {spec.tool} {spec.description}".lower()
            score = sum(3 if w in spec.name.lower() else 1 for w in words if w in text)
            if score or not words:
                scored.append((-score, n, spec))
        return [s for _, _, s in sorted(scored)[:limit]]

    def block_for(self, name: str, raw: str) -> CodeBlock | None:
        """The step for a call of ``name`` (None: not one of these tools)."""
        if name == FIND:
            args = parse_arguments(raw)
            return CodeBlock("json", json.dumps(args, ensure_ascii=False), tool=FIND)
        if name == CALL:
            args = parse_arguments(raw)
            target = str(args.get("tool", ""))
            inner = args.get("arguments", {})
            if isinstance(inner, str):
                inner = parse_arguments(inner)
            if target not in self.last_offer.routes:
                raise ToolArgumentsError(f"there is no tool named {target!r}; search with "
                                         f"{FIND}(query) first.")
            return self.block_for(target, json.dumps(inner))
        spec = self.last_offer.routes.get(name)
        if spec is None:
            return None
        args = parse_arguments(raw)
        if spec.kind == "function":
            return CodeBlock("python", call_code(spec.tool or spec.name, args))
        if spec.kind == "edit":  # reviewed as a diff (session.cell_edits), never run
            return CodeBlock("json", json.dumps(args, ensure_ascii=False), tool=name)
        return CodeBlock("json", json.dumps(args, indent=1, ensure_ascii=False), tool=name)

    def spec(self, name: str) -> ToolSpec | None:
        if name == FIND:
            return ToolSpec(FIND, "Search the tools not offered directly.", {}, kind="meta",
                            read_only=True)
        return self.last_offer.routes.get(name)

    async def run(self, block: CodeBlock, timeout: float) -> ExecResult:
        """Run an approved tool step (the block's code: the possibly edited arguments)."""
        try:
            args = parse_arguments(block.code)
        except ToolArgumentsError as exc:
            return ExecResult("error", [error_output(f"Not called: {exc}")])
        if block.tool == FIND:
            return ExecResult("ok", [_text(self.find_text(str(args.get("query", ""))))])
        spec = self.spec(block.tool)
        if spec is None:
            return ExecResult("error", [error_output(f"The tool {block.tool} is no longer available.")])
        for provider in self.providers:
            if spec in provider.specs():
                return await provider.call(spec, args, timeout)
        return ExecResult("error", [error_output(f"The server of {spec.label} is not running.")])

    def find_text(self, query: str) -> str:
        found = self.find(query)
        if not found:
            return f"No tool matches {query!r}."
        return "\n\n".join(
            f"{s.name}: {s.description}\nparameters: {json.dumps(s.parameters)}" for s in found
        ) + f"\n\nCall one with {CALL}(tool, arguments)."

    def prompt_list(self) -> str:
        """For models without native tool calls: the tools, one line each."""
        lines = []
        for spec in self.all_specs():
            props = spec.parameters.get("properties", {}) if spec.parameters else {}
            params = ", ".join(props)
            lines.append(f"- {spec.name}({params}): {spec.description.splitlines()[0][:160]}"
                         if spec.description else f"- {spec.name}({params})")
        more = f"\n(and {len(lines) - 60} more tools not listed)" if len(lines) > 60 else ""
        return "\n".join(lines[:60]) + more


META_TOKENS = 160


def meta_find(hidden: int) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": FIND,
        "description": f"Search {hidden} more tools (of MCP servers) that are not listed here; "
        "returns matching tool names, descriptions and parameters.",
        "parameters": {"type": "object", "properties": {"query": {
            "type": "string", "description": "words describing what the tool should do"}},
            "required": ["query"]}}}


def meta_call() -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": CALL,
        "description": f"Call a tool found with {FIND}, by its name.",
        "parameters": {"type": "object", "properties": {
            "tool": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"]}}}


def _text(text: str) -> dict[str, Any]:
    return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}


def error_output(text: str) -> dict[str, Any]:
    """An error a tool step ended with, as a Jupyter error output."""
    return {"output_type": "error", "ename": "ToolError", "evalue": text, "traceback": [text]}


# ----------------------------------------------------------------- a reply's calls as steps
def blocks_from_calls(toolbox: Toolbox | None, calls: list[Any]
                      ) -> tuple[list[CodeBlock], list[str]]:
    """Steps for the reply's tool calls: code (``execute``), a notebook function (code
    too) or an MCP tool step; problems name the calls that could not become one."""
    if toolbox is None:
        return codeblocks.blocks_from_tool_calls(calls)
    return codeblocks.blocks_from_tool_calls(
        calls, toolbox.block_for, "Use execute(language, code) or one of the tools offered.")

def fenced_tool_calls(toolbox: Toolbox, blocks: list[CodeBlock]
                      ) -> tuple[list[CodeBlock], list[str]]:
    """Markdown mode: a ```tool block holding {"tool": NAME, "arguments": {...}}."""
    out: list[CodeBlock] = []
    problems: list[str] = []
    for block in blocks:
        if block.language != "tool":
            out.append(block)
            continue
        try:
            call = json.loads(block.code)
            if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                raise ValueError('a tool block holds {"tool": NAME, "arguments": {...}}')
            found = toolbox.block_for(call["tool"], json.dumps(call.get("arguments", {})))
            if found is None:
                raise ValueError(f"there is no tool named {call['tool']!r}")
        except (ValueError, ToolArgumentsError) as exc:
            problems.append(f"The tool block was not run: {exc}.")
            continue
        out.append(found)
    return out, problems


def tool_flags(spec: ToolSpec | None) -> list[Flag]:
    """What the card says about a tool call: what its provider found about the tool's own
    text (a poisoned description, a description changed since it was approved: high), then
    its server's hints (which are only hints)."""
    if spec is None or spec.kind == "meta":
        return []
    found = [Flag(0, category, severity, reason) for severity, category, reason in spec.trust]
    if spec.read_only:
        return found
    if spec.destructive:
        return found + [Flag(0, "destructive", HIGH, f"the server '{spec.server}' marks this "
                             "tool destructive: it may delete or overwrite data")]
    return found + [Flag(0, "tool", MEDIUM, f"the server '{spec.server}' does not mark this "
                         "tool read-only: it may change things")]
