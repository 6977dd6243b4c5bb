"""The engine's settings: every ``c.Engine.*`` option, with its environment variable.

``EngineSettings`` is the base class of ``Engine``, so configuration sections named
``Engine`` apply; a bad value is reported and the default kept (``oi_kernel.config``).
The parts the engine holds (its ``rollback``) read their settings here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields, make_dataclass
from types import MappingProxyType
from typing import Any

from traitlets import Bool, Enum, Float, Integer, List, Unicode, observe, validate
from traitlets.config import LoggingConfigurable

from oi_kernel import config
from oi_kernel.core import approval_modes, change_ignore
from oi_kernel.errors import OIError


class EngineSettings(config.Remembered, LoggingConfigurable):
    """What the turn loop may do: approval policy, steps, limits, context, prompt, and what
    change tracking and checkpoints keep. Its environment variables (each trait's ``env``
    tag) are read by the resolver's environment step (``config.environment_value``)."""


    approval = Enum(
        list(approval_modes.NAMES), config=True, help=approval_modes.help_text(),
        default_value=approval_modes.DEFAULT,
    ).tag(env="OI_APPROVAL", env_also="OI_AUTO_RUN", env_also_value=approval_modes.AUTO_RUN)


    max_steps = Integer(
        10,
        config=True,
        help="Most LLM calls for one instruction before the turn stops. Env: OI_MAX_STEPS.",
    ).tag(env="OI_MAX_STEPS", env_min=1)


    max_instruction_chars = Integer(
        100_000,
        config=True,
        help="Longest instruction (characters) sent to the LLM; a longer one is refused with "
        "a message before any request (about 4 characters per token: 100,000 is ~25,000 "
        "tokens). Put large data in a file and name it instead. Env: OI_MAX_INSTRUCTION_CHARS.",
    ).tag(env="OI_MAX_INSTRUCTION_CHARS", env_min=1)



    @validate("approval", "max_steps", "max_cost_per_session", "max_tokens_per_session")
    def _within_policy(self, proposal: Any) -> Any:
        return config.check_floor(self, proposal["trait"].name, proposal["value"])

    @observe("max_steps")
    def _check_max_steps(self, change: dict[str, Any]) -> None:
        if change["new"] < 1:
            raise OIError("max_steps must be at least 1 (it counts LLM calls per instruction).")

    check_answers = Enum(
        ["mark", "ask-model", "off"],
        config=True,
        help="Trace every number in the model's final answer to the step output that printed "
        "it (docs/answer-check.md): 'mark' (show under the answer where each number came from, "
        "and mark those found in no output: '23% — not in any output'), 'ask-model' (as "
        "'mark', but first send an answer with untraced numbers back to the model once to "
        "correct them or compute them in a step), 'off'. Env: OI_CHECK_ANSWERS.",
        default_value="mark",
    ).tag(env="OI_CHECK_ANSWERS")


    small_model_max_steps = Integer(
        3,
        config=True,
        help="Most LLM calls for one instruction with a small local model (local/...): its "
        "first try and the retries after an error or missing output (the lower of this and "
        "max_steps applies). Env: OI_SMALL_MODEL_MAX_STEPS.",
    ).tag(env="OI_SMALL_MODEL_MAX_STEPS", env_min=1)


    small_model_examples = Integer(
        3,
        config=True,
        help="Worked examples sent to a small local model with each request (those closest "
        "to the instruction, from examples.SMALL_EXAMPLES); 0: none.",
    )

    small_model_redraws = Integer(
        2,
        config=True,
        help="Drafts of a small local model that may be set aside per instruction because the "
        "code itself shows a mistake (a name it never set, a value of the instruction left "
        "out, invalid syntax, nothing printed; see oi_kernel.core.drafts); the model is then asked "
        "again, sampling at temperature 0.5 with a fixed seed per redraw. Each redraw is an "
        "LLM call within small_model_max_steps. 0: propose every draft.",
    )

    small_model_samples = Integer(
        12, config=True,
        help="More drafts a small model is asked for, for each reply with Python code "
        "(temperatures 0.5 and 0.8 alternately, fixed seeds; not shown): the code most drafts "
        "without visible mistakes agree on is proposed, the first draft among equals "
        "(self-consistency, see oi_kernel.core.consensus). Sampling stops as soon as the "
        "choice cannot change. Replaces the redraws. 0: propose the first draft. "
        "Env: OI_SMALL_MODEL_SAMPLES.",
    ).tag(env="OI_SMALL_MODEL_SAMPLES", env_min=0)


    small_model_sample_seconds = Float(
        20.0,
        config=True,
        help="Most seconds spent sampling more drafts of one reply (small_model_samples); "
        "sampling stops after the draft that passes it, and a model whose first reply took "
        "more than a quarter of it is not sampled (4 samples would not fit).",
    )

    known_safe = List(
        Unicode(),
        config=True,
        help="More operations known to be safe, for `%approval risky` (which runs a block "
        "without asking only when everything in it is known safe): qualified names or "
        "patterns ('mylib.summarise', 'mylib.*') and method names ('.summarise'). Process "
        "creation is never known safe, and the administrator's policy "
        "(known_safe_denied) wins. The built-in table: oi_kernel/safety/known_safe/"
        "known_safe.toml (docs/security.md).",
    )

    step_timeout = Float(
        config=True,
        help="Seconds one code block may run before it is interrupted (the child kernel is "
        "restarted if it does not stop within a few seconds) and the LLM is told it timed out; "
        "0: no limit. Env: OI_STEP_TIMEOUT.",
    ).tag(env="OI_STEP_TIMEOUT", env_kind="number")
    max_tokens_per_turn = Integer(
        config=True, help="Most tokens (prompt + completion) one instruction may use; 0: no cap. "
        "Env: OI_MAX_TOKENS.",
    ).tag(env="OI_MAX_TOKENS", env_kind="number")
    max_cost_per_turn = Float(
        config=True, help="Most cost in USD one instruction may use (models with a known price); "
        "0: no cap. Env: OI_MAX_COST.",
    ).tag(env="OI_MAX_COST", env_kind="number")
    max_tokens_per_session = Integer(
        config=True, help="Most tokens the whole session may use; 0: no cap. "
        "Env: OI_MAX_SESSION_TOKENS.",
    ).tag(env="OI_MAX_SESSION_TOKENS", env_kind="number")
    max_cost_per_session = Float(
        config=True, help="Most cost in USD the whole session may use; 0: no cap. "
        "Env: OI_MAX_SESSION_COST.",
    ).tag(env="OI_MAX_SESSION_COST", env_kind="number")






    max_output_chars = Integer(
        6000, config=True, help="Characters of a step's output the LLM sees (head + tail)."
    )
    context_budget = Integer(
        0,
        config=True,
        help="Most prompt tokens per request. Older turns are condensed to fit (outputs first, "
        "then code, then whole turns become one-line summaries); the system prompt, the current "
        "instruction and the previous turn are kept. 0: the model's input limit from litellm's "
        "model map minus reply_reserve (32,000 when unknown). Env: OI_CONTEXT_BUDGET.",
    ).tag(env="OI_CONTEXT_BUDGET", env_min=0)


    notebook_context_cells = Integer(
        3,
        config=True,
        help="%%oi in an ordinary notebook: how many of the cells run before the instruction "
        "the model is shown (their source, a compact form of their output value, and the "
        "error of the cell just before when it failed; secrets masked, within the context "
        "budget). `%%oi --no-context` leaves them out for one cell; 0: never. "
        "Env: OI_NOTEBOOK_CONTEXT_CELLS.",
    ).tag(env="OI_NOTEBOOK_CONTEXT_CELLS", env_min=0)


    reply_reserve = Integer(
        4096, config=True, help="Tokens kept free for the reply when the budget is automatic."
    )
    max_images = Integer(
        3, config=True, help="Most images per step shown to a vision-capable model."
    )
    custom_instructions = Unicode(
        "", config=True, help="Text appended to the system prompt (your own instructions)."
    )
    system_message = Unicode(
        "",
        config=True,
        help="Replaces the built-in system prompt (custom_instructions are still appended). "
        "Risky: the built-in prompt tells the model how to propose code (the execute tool or "
        "fenced blocks) and that each step is approved; without that the model may stop "
        "writing runnable code. Empty: the built-in prompt.",
    )
    languages = List(
        Unicode(),
        config=True,
        help="Languages offered to the model (a subset of those installed, e.g. ['python']); "
        "empty: every available one.",
    )

    # ------------------------------------------------------------ rollback (core.rollback)
    track_changes = Bool(
        True, config=True,
        help="After each step, list the variables and files it created, changed or deleted "
        "(in the cell, for the model, in the log).")
    checkpoints_enabled = Bool(
        True, config=True,
        help="Before an instruction runs code, keep a checkpoint so %undo / %restore can roll "
        "the namespace and the working directory back (see docs/rollback.md).")
    max_checkpoints = Integer(
        10, config=True, help="Checkpoints kept; older ones are dropped (undo reaches back "
        "this many instructions).")
    max_file_bytes = Integer(
        10_000_000, config=True,
        help="Largest file whose content is saved before a step changes it (bytes); larger "
        "files are named as not restorable.")
    max_checkpoint_bytes = Integer(
        100_000_000, config=True,
        help="Most bytes of saved file contents per checkpoint; beyond it files are named as "
        "not restorable.")
    scan_budget_ms = Float(
        50.0, config=True,
        help="Time for one scan of the working directory (before and after a step); a scan cut "
        "short is said so.")
    scan_max_files = Integer(20_000, config=True, help="Most files one scan looks at.")
    checkpoint_dir = Unicode(
        "", config=True,
        help="Where saved file contents are kept; empty: .oi_checkpoints/<session> in the "
        "working directory (inside the sandbox's writable workspace).")

    change_ignore = List(
        Unicode(), config=True,
        help="Files and folders the change summaries and checkpoints leave out, in gitignore "
        "syntax (e.g. ['*.tmp', 'scratch/', '!.config/']), besides tools' folders (.ipython, "
        ".jupyter, .cache, .git, ...; see docs/rollback.md). Env: OI_CHANGE_IGNORE "
        "(comma-separated).").tag(env=change_ignore.ENV_VAR, env_kind="patterns")


    change_ignore_gitignore = Bool(
        True, config=True,
        help="Also leave out what the project's .gitignore ignores (the working directory's, "
        "and the git repository root's).")

    # --------------------------------------------------- the runtime guard (core.guard)
    guard = Enum(
        ["risky", "unasked", "off"], config=True,
        help="Which steps run under the runtime guard, which stops network, writes outside the "
        "workspace or over existing files, processes, native code and changes to the "
        "environment, then asks: 'risky' (steps that run unasked because the review let them "
        "through under %approval risky), 'unasked' (every step nobody approved: auto-run and "
        "Run all too), 'off'. Steps a person approved never run guarded. Env: OI_GUARD.",
        default_value="risky",
    ).tag(env="OI_GUARD")


    guard_time_limit = Float(
        60.0, config=True,
        help="Seconds a guarded step may run (a lower step_timeout wins); when it is stopped, "
        "the step is asked about and may run without this limit. 0: none. "
        "Env: OI_GUARD_TIME_LIMIT (default 60).",
    ).tag(env="OI_GUARD_TIME_LIMIT", env_kind="number")


    guard_memory_limit = Unicode(
        "2G", config=True,
        help="Memory a guarded step may take above what the kernel uses when it starts "
        "(e.g. '2G', '512M'; RLIMIT_AS, so threads' reserved address space counts); when it "
        "runs out, the step is asked about and may run without this limit. '0': none. "
        "Env: OI_GUARD_MEMORY_LIMIT (default 2G).",
    ).tag(env="OI_GUARD_MEMORY_LIMIT", env_kind="text")


    # --------------------------------------------------- previews (core.preview)
    preview = Enum(
        ["off", "on-request", "flagged"], config=True,
        help="Previews: running a step in a disposable copy (a fork of the child kernel in "
        "private namespaces, the workspace a copy-on-write overlay, no network) to show what "
        "it would print and change before it is decided. 'on-request' (the card's Preview "
        "button, p at the terminal question, ACP's Preview option), 'flagged' (also every "
        "step with a risk flag is previewed before its card shows), 'off'. The "
        "administrator's policy may require 'flagged'. Env: OI_PREVIEW.",
        default_value="on-request",
    ).tag(env="OI_PREVIEW")


    preview_timeout = Float(
        30.0, config=True,
        help="Seconds a preview may run before it is stopped (the card then says so). "
        "Env: OI_PREVIEW_TIMEOUT (default 30).",
    ).tag(env="OI_PREVIEW_TIMEOUT", env_kind="number")



# ------------------------------------------------ one frozen settings object per turn
# What the administrator's policy sets on the engine besides the traits (session.policy_rules):
# the least approval that applies even after "Run all", the preview floor, "ask" after outside
# content, operations never known safe, and who set each session cap (for its message).
# Each with its value when there is no policy.
POLICY_FIELDS: tuple[tuple[str, type, Any], ...] = (
    ("approval_floor", str, "never"), ("preview_floor", str, ""), ("untrusted_content", str, ""),
    ("known_safe_denied", tuple, ()), ("cap_sources", Mapping, MappingProxyType({})),
)
_NO_POLICY = {name: value for name, _, value in POLICY_FIELDS}
_TYPES = {"Integer": int, "Int": int, "Float": float, "Bool": bool, "List": tuple}


def _field_type(trait: Any) -> type:
    return _TYPES.get(type(trait).__name__, str)


TurnSettings = make_dataclass(
    "TurnSettings",
    [(name, _field_type(trait))
     for name, trait in sorted(EngineSettings.class_traits(config=True).items())]
    + [(name, kind, field(default_factory=lambda v=value: v))
       for name, kind, value in POLICY_FIELDS]
    + [("llm", Any, None), ("tools", Any, None)],
    frozen=True, slots=True,
)
TurnSettings.__module__ = __name__
TurnSettings.__doc__ = (
    "The engine's settings as one turn reads them: every ``c.Engine.*`` trait and what the "
    "administrator's policy set (``POLICY_FIELDS``), and the model's (``llm``: every "
    "``c.LLM.*`` trait, the model's ``freeze()``) and the tools' (``tools``: every ``c.Tools.*`` "
    "trait), resolved once when the turn starts "
    "(``freeze``) and never changed while it runs (lists are tuples, the dict a read-only "
    "mapping). A change by ``%config``, a command or the policy applies to the next turn.")


def freeze(settings: Any) -> Any:
    """The ``TurnSettings`` of ``settings`` (the engine) now."""
    values = {}
    for item in fields(TurnSettings):
        value = getattr(settings, item.name, _NO_POLICY.get(item.name))
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            value = MappingProxyType(dict(value))
        values[item.name] = value
    model = getattr(settings, "llm", None)  # the engine's model (none: bare EngineSettings)
    values["llm"] = model.freeze() if model is not None else None
    tools = getattr(settings, "tool_settings", None)  # the engine's ``c.Tools.*``
    values["tools"] = tools.freeze() if tools is not None else None
    return TurnSettings(**values)
