"""The session's tools beyond code: its MCP servers (from the MCP config files) and the
notebook functions offered with ``%tool``. The commands ``%mcp`` and ``%tool`` call these;
the engine's ``Toolbox`` does the rest."""

from __future__ import annotations

import json
import re
from typing import Any

from oi_kernel import config
from oi_kernel.core.events import ToolsOffered
from oi_kernel.core.tools import CALL, FIND, ToolSpec
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext, context_of
from oi_kernel.core.types import CodeBlock
from oi_kernel.errors import ConfigError, OIError

TOOL_MIME = "application/vnd.oi.tool+json"
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
_RESERVED = {"execute", "run_code", "python", FIND, CALL}


def mcp_provider(session: Any) -> Any:
    """The session's ``McpTools`` (None when no server is configured)."""
    return next((p for p in session.engine.toolbox.providers
                 if type(p).__name__ == "McpTools"), None)


def attach_mcp(session: Any, *, report: bool = True) -> Any:
    """Read the MCP config files and give the engine the servers' tools (started later, in
    the background). A bad config is reported as a configuration problem."""
    from oi_kernel.execution.mcp.config import load_servers

    settings = session.engine.tool_settings
    try:
        servers = load_servers(settings.mcp_config, {
            "call_timeout": settings.call_timeout, "connect_timeout": settings.connect_timeout})
    except ConfigError as exc:
        if report:
            config.warn(str(exc))
        servers = []
        session.mcp_error = str(exc)
    else:
        session.mcp_error = ""
    servers = _allowed_by_policy(session, servers, report)
    if not servers:
        return None
    from oi_kernel.execution.mcp.hub import McpTools  # only with servers: kernel start-up
    from oi_kernel.execution.mcp.pins import PinStore, default_path

    # A person in a notebook waits at most ready_wait for servers still starting; a script
    # (the API, a headless run) wants the same tools every run: each server's own timeout.
    interactive = getattr(session, "kind", "kernel") in ("kernel", "magic")
    hub = McpTools(servers, PinStore(default_path(settings.pin_file)),
                   wait=settings.ready_wait if interactive else settings.connect_timeout)
    session.engine.toolbox.providers.append(hub)
    engine = session.engine
    if not isinstance(engine.steps.approver, PinOnApproval):
        engine.steps.approver = PinOnApproval(engine.steps.approver, engine.toolbox)
    return hub


class PinOnApproval:
    """The session's approver, and: when a person approves a call of an MCP tool, that
    tool's description and schema as the card showed them are pinned (``McpTools.approved``).
    Calls that were not asked never reach it (they pin only a tool with no pin yet)."""

    def __init__(self, inner: Any, toolbox: Any) -> None:
        self.inner = inner
        self.toolbox = toolbox

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def decide(self, request: Any) -> Any:
        spec = self.toolbox.spec(request.block.tool) if request.block.tool else None
        decision = await self.inner.decide(request)
        if (spec is not None and spec.kind == "mcp" and decision.action == "run"
                and decision.by not in ("auto", "replay", "policy")):
            for provider in self.toolbox.providers:
                approved = getattr(provider, "approved", None)
                if approved is not None and spec.server in {
                        s.name for s in getattr(provider, "servers", [])}:
                    approved(spec)
        return decision


def _allowed_by_policy(session: Any, servers: list[Any], report: bool) -> list[Any]:
    """The servers the administrator's policy allows; the others are never started, and
    ``%mcp`` says why (``session.mcp_refused``)."""
    policy = getattr(session, "policy", None)
    session.mcp_refused = []
    if policy is None or not policy.active:
        return servers
    kept = [s for s in servers if policy.mcp_server_allowed(s.name)]
    refused = [s.name for s in servers if s not in kept]
    if refused:
        session.mcp_refused = refused
        text = (f"MCP server{'s' if len(refused) > 1 else ''} "
                f"{', '.join(repr(n) for n in refused)} not started: {mcp_policy_reason(policy)}")
        if report:
            config.warn(text)
    return kept


def mcp_policy_reason(policy: Any) -> str:
    if policy.strict:
        return "the administrator's policy could not be read fully (strictest mode: no MCP server)."
    return (f"not allowed by {policy.where('mcp')} ({'; '.join(r for r in policy.rules() if r.startswith('MCP'))}).")


async def reload_mcp(session: Any) -> str:
    """``%mcp reload``: stop the servers, read the config again, start them."""
    old = mcp_provider(session)
    if old is not None:
        await old.close()
        session.engine.toolbox.providers.remove(old)
    hub = attach_mcp(session, report=False)
    if session.mcp_error:
        raise OIError(session.mcp_error)
    if hub is None:
        return describe_mcp(session)
    notices = await hub.prepare(wait=max(s.connect_timeout for s in hub.servers))
    return describe_mcp(session) + ("\n\n" + "\n\n".join(notices) if notices else "")


HOW_TO_CONFIGURE = (
    "\n\nPut them in a JSON file in the format Claude Desktop uses, "
    '`{"mcpServers": {"NAME": {"command": "...", "args": [...]}}}` (or `{"url": "http://..."}` '
    "for streamable HTTP), at `$OI_MCP_CONFIG`, `c.Tools.mcp_config`, or `mcp.json` in a "
    "Jupyter config directory (`jupyter --paths`), then run `%mcp reload`.")


def sdk_missing() -> str:
    """The install hint when the MCP SDK is not importable; "" when it is."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return ("The MCP Python SDK is not installed: `pip install 'oi-kernel[mcp]'` (or "
                "`pip install mcp`), then restart the kernel.")
    return ""


async def show_mcp(session: Any) -> str:
    """``%mcp``: start the servers if they are not yet (bounded), then describe them."""
    hub = mcp_provider(session)
    notices: list[str] = []
    if hub is not None and not sdk_missing():
        # asked for by name: wait for each server up to its own connect timeout
        notices = await hub.prepare(wait=max(s.connect_timeout for s in hub.servers))
        session.engine.toolbox.offer(session.engine.tool_budget_tokens())
    text = describe_mcp(session)
    return text + ("\n\n" + "\n\n".join(notices) if notices else "")


def describe_mcp(session: Any) -> str:
    hub = mcp_provider(session)
    if session.mcp_error:
        return f"The MCP config could not be used: {session.mcp_error}"
    refused = getattr(session, "mcp_refused", [])
    blocked = (f"\n\nNot started: {', '.join(f'**{n}**' for n in refused)} — "
               f"{mcp_policy_reason(session.policy)}") if refused else ""
    missing = sdk_missing()
    install = f"\n\n{missing}" if missing else ""
    if hub is None:
        return ("No MCP server may be started." + blocked) if refused else (
            "No MCP servers are configured." + HOW_TO_CONFIGURE + install)
    text = "**MCP servers**\n\n" + hub.describe() + blocked + install
    offer = session.engine.toolbox.last_offer
    if offer.hidden:
        text += (f"\n\n{len(offer.routes) - offer.hidden} tools are offered directly; "
                 f"{offer.hidden} more do not fit the tool budget "
                 f"({session.engine.tool_budget_tokens():,} tokens) and are reached through "
                 f"`{FIND}` / `{CALL}`.")
    return text


# ----------------------------------------------------------------- notebook functions
_INTROSPECT = r'''
def _oi_tool_specs(names):
    import inspect, json, types, typing
    from IPython.display import display
    ns = get_ipython().user_ns
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    def schema(t):
        origin, args = typing.get_origin(t), typing.get_args(t)
        if t in simple:
            return {"type": simple[t]}
        if t in (list, tuple, set) or origin in (list, tuple, set):
            return {"type": "array", "items": schema(args[0]) if args else {}}
        if t is dict or origin is dict:
            return {"type": "object"}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin in (typing.Union, getattr(types, "UnionType", None)):
            kept = [schema(a) for a in args if a is not type(None)]
            return kept[0] if len(kept) == 1 else {"anyOf": kept}
        return {}
    def arg_docs(doc):
        out = {}
        for line in doc.splitlines():
            line = line.strip()
            for head in (":param ", ""):
                if line.startswith(head) and ":" in line[len(head):]:
                    name, _, text = line[len(head):].partition(":")
                    name = name.split("(")[0].split()[-1] if name.split() else ""
                    if name.isidentifier() and text.strip():
                        out.setdefault(name, text.strip())
        return out
    for name in names:
        f = ns.get(name)
        if not callable(f):
            display({"text/plain": f"{name}: not a function in this kernel",
                     "application/vnd.oi.tool+json": {"name": name, "error": "not a function"
                     + ("" if f is None else f" (it is a {type(f).__name__})")}}, raw=True)
            continue
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            sig = None
        try:
            hints = typing.get_type_hints(f)
        except Exception:
            hints = {}
        doc = inspect.getdoc(f) or ""
        docs = arg_docs(doc)
        props, required = {}, []
        for p in (sig.parameters.values() if sig else []):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                continue
            prop = schema(hints.get(p.name, p.annotation))
            if p.name in docs:
                prop["description"] = docs[p.name]
            if p.default is p.empty:
                required.append(p.name)
            else:
                try:
                    prop["default"] = json.loads(json.dumps(p.default))
                except (TypeError, ValueError):
                    pass
            props[p.name] = prop
        spec = {"name": name, "description": doc.split("\n\n")[0].strip(),
                "parameters": {"type": "object", "properties": props, "required": required}}
        display({"text/plain": f"tool {name}{sig if sig else '(...)'}",
                 "application/vnd.oi.tool+json": spec}, raw=True)
_oi_tool_specs(%r)
del _oi_tool_specs
'''


def check_names(names: list[str]) -> None:
    for name in names:
        if not _IDENT.match(name) or name in _RESERVED:
            raise OIError(f"{name!r} cannot be a tool name: use a function whose name starts "
                          "with a letter (letters, digits, _), not execute/run_code/python/"
                          "mcp_find/mcp_call.")


async def offer_functions(session: Any, names: list[str],
                          context: TurnContext = NO_CONTEXT) -> list[str]:
    """Offer notebook functions as tools; returns one line per function (or problem). The
    signature check runs for the request of ``context`` (the command's cell)."""
    check_names(names)
    result = await session.executor.run(CodeBlock("python", _INTROSPECT % (names,)),
                                        context=context)
    specs = [o["data"][TOOL_MIME] for o in result.outputs
             if TOOL_MIME in (o.get("data") or {})]
    if result.status != "ok" or not specs:
        raise OIError("Could not read the functions' signatures in the kernel "
                      f"({result.status}): {result.message or result.outputs}")
    lines = []
    for spec in specs:
        if "error" in spec:
            lines.append(f"- `{spec['name']}`: {spec['error']}; define it first.")
            continue
        name = spec["name"]
        description = spec["description"] or f"The notebook function {name}."
        tool = ToolSpec(name=name, description=description, parameters=spec["parameters"],
                        kind="function", tool=name)
        tool.tokens = len(json.dumps(tool.definition())) // 3 + 8
        session.engine.toolbox.functions[name] = tool
        lines.append(f"- `{name}({', '.join(spec['parameters']['properties'])})`: offered")
    session.publish(ToolsOffered(sorted(session.engine.toolbox.functions)))
    return lines


async def tool_command(session: Any, words: list[str], events: Any, usage: OIError) -> str:
    """``%tool [NAME ...] [-d NAME ...]``: offer, list or remove notebook functions."""
    functions = session.engine.toolbox.functions
    if not words:
        return describe_functions(session)
    if words[0] in ("-d", "--delete"):
        if len(words) < 2:
            raise usage
        missing = [w for w in words[1:] if w not in functions]
        if missing:
            raise OIError(f"Not offered as tools: {', '.join(missing)}.")
        for name in words[1:]:
            del functions[name]
        return f"No longer offered: {', '.join(words[1:])}."
    cell = context_of(events())  # the signature check's code runs for the command's cell
    return "\n".join(await offer_functions(session, words, cell))


def describe_functions(session: Any) -> str:
    functions = session.engine.toolbox.functions
    if not functions:
        return ("No notebook functions are offered as tools. Offer one with `%tool NAME` (a "
                "function defined in this notebook).")
    lines = [f"- `{s.name}`: {s.description} — parameters: "
             f"`{json.dumps(s.parameters.get('properties', {}))}`" for s in functions.values()]
    return "**Notebook functions offered as tools**\n\n" + "\n".join(lines)
