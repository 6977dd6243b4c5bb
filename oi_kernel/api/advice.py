"""What a script is told when no model can be reached: the fix names the ``Interpreter``'s
arguments and the environment, not the magics and "before starting Jupyter" of a notebook.

``for_script`` rewrites the few errors whose fix is the caller's set-up (no model, no or a
rejected key, an unreachable server) and drops their traceback through the engine: a script
sees one error, raised where it called ``chat()``. Other errors pass unchanged.
"""

from __future__ import annotations

from oi_kernel.errors import LLMAuthError, LLMConnectionError, NotConfiguredError

SCRIPT_FIX = (
    "Point the Interpreter at a model, for example\n"
    '    Interpreter(model="gpt-4o-mini", api_key="sk-...")\n'
    '    Interpreter(model="ollama_chat/qwen2.5-coder:1.5b", api_base="http://127.0.0.1:11434")\n'
    '    Interpreter(model="my-model", api_base="http://127.0.0.1:8080/v1")  # OpenAI-compatible\n'
    "or set OI_MODEL (and OI_API_KEY, or the provider's own variable such as OPENAI_API_KEY;\n"
    "OI_API_BASE for a local server) in the environment that runs this script.\n"
    "Model names are litellm's: https://docs.litellm.ai/docs/providers"
)
# The notebook's advice in the engine's messages, and what a script does instead.
_REWRITES = (
    (", before starting Jupyter", " in the environment that runs this script, or pass "
     "Interpreter(api_key=...)"),
    ("set OI_API_BASE before starting Jupyter, or `c.LLM.api_base` in the kernel's config",
     "pass Interpreter(api_base=...) or set OI_API_BASE in the environment that runs this "
     "script"),
)


def for_script(exc: BaseException) -> BaseException:
    """``exc`` with the advice a script needs, without its traceback when the fix is the
    caller's set-up; any other exception as it is."""
    if isinstance(exc, NotConfiguredError):
        text = "No language model is configured for this Interpreter.\n" + SCRIPT_FIX
        if exc.footer:
            text += "\n" + exc.footer
        exc.args = (text,)
    elif isinstance(exc, (LLMAuthError, LLMConnectionError)):
        text = str(exc)
        for notebook, script in _REWRITES:
            text = text.replace(notebook, script)
        exc.args = (text,)
    else:
        return exc
    exc.__cause__ = None  # litellm's exception and the engine's frames say nothing more here
    exc.__suppress_context__ = True
    return exc.with_traceback(None)
