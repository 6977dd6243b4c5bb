"""What a session is, in one place: where code runs (this machine, a sandbox, a gateway, or
the notebook's own kernel), the model and approval, the limits, the log, and the
administrator's policy when one is in force. ``%status`` shows it as markdown; the lab
extension's status item gets the same facts as fields of its ``status`` message."""

from __future__ import annotations

from typing import Any

SANDBOX_TEXT = ("bubblewrap: no network, a read-only file system except the working "
                "directory, a private /tmp")


def placement(session: Any) -> str:
    """"gateway", "sandbox", "local" (a child kernel here) or "shell" (this kernel)."""
    child = session.child
    if child is None:
        return "shell"
    if getattr(child, "gateway_url", ""):
        return "gateway"
    return "sandbox" if child.sandbox else "local"


def status_fields(session: Any) -> dict[str, Any]:
    """The fields the lab extension's status message adds for the session."""
    policy = session.policy
    child = session.child
    return {
        "child": placement(session),
        "child_where": child.where if child is not None else "in this notebook's kernel",
        "gateway_url": getattr(child, "gateway_url", "") if child is not None else "",
        "policy": [str(p) for p in policy.files] if policy is not None else [],
        "policy_rules": policy.rules() if policy is not None else [],
        "policy_strict": bool(policy is not None and policy.strict),
    }


def _code_runs(session: Any) -> tuple[str, str]:
    """(where code runs, the sandbox row) in words."""
    child = session.child
    where = placement(session)
    if where == "shell":
        return ("in this notebook's own kernel (your namespace)",
                "not available: the code runs in this kernel")
    state = ("running" if child.is_running else
             "stopped: " + child._dead_reason if child._dead_reason else "starts with the first code")
    runs = f"in a child kernel (`{child.kernel_name}`) {child.where}; {state}"
    if where == "gateway":
        return runs, ("**the gateway's job**: the child kernel runs on the gateway, so its "
                      "confinement (and memory limits) are whatever its kernelspec sets up")
    if where == "sandbox":
        return runs, f"on ({SANDBOX_TEXT})"
    return runs, "off: code runs with your own permissions and network"


def status_markdown(session: Any) -> str:
    """``%status``: the session in a table, then the policy."""
    engine, llm = session.engine, session.llm
    runs, sandbox = _code_runs(session)
    model = f"`{llm.model}`" if llm.model else "(none configured)"
    if llm.api_base:
        model += f" at `{llm.api_base}`"
    limits = [f"{engine.max_steps} LLM calls per instruction"]
    if engine.max_tokens_per_session:
        limits.append(f"{engine.max_tokens_per_session:,} tokens per session")
    if engine.max_cost_per_session:
        limits.append(f"${engine.max_cost_per_session:g} per session")
    usage = engine.usage
    cost = f", ${usage.cost:.4f}" if usage.cost is not None else ""
    log = session.log_path
    rows = [
        ("model", model),
        ("approval", f"`{engine.approval}`"),
        ("code runs", runs),
        ("sandbox", sandbox),
        ("limits", "; ".join(limits)),
        ("used", f"{usage.prompt_tokens + usage.completion_tokens:,} tokens{cost}, "
                 f"{len(engine.turns)} instructions"),
        ("session log", f"`{log}`" if log else
         ("opens with the first instruction" if session.logging else "off")),
        ("policy", _policy_row(session.policy)),
    ]
    table = "\n".join(f"| {k} | {v.replace(chr(10), ' ')} |" for k, v in rows)
    text = f"| | |\n|---|---|\n{table}"
    policy = session.policy
    if policy is not None and policy.strict:
        text += "\n\n⚠️ " + policy.strict_message().replace("\n", "  \n")
    return text


def _policy_row(policy: Any) -> str:
    if policy is None or not policy.active:
        return "none"
    files = ", ".join(f"`{p}`" for p in policy.files)
    rules = "; ".join(policy.rules()) or "no rules"
    return f"**in force** ({files}): {rules}"
