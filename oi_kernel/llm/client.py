"""The LLM client: one chat request to the configured model, through litellm.

``LLM.stream()`` sends one chat request, streams text and reasoning deltas to callbacks,
assembles tool calls, retries transient failures (429, 5xx, connection refused) while
nothing has streamed yet, and turns every litellm/openai/httpx exception into an
``LLMError`` whose message says how to fix it; a server that rejects ``tools`` gives
``LLMToolsUnsupportedError`` (remembered: the next requests go without them).

Small-model mode (``small_model``): whether the engine treats the model as a small one
(``core.small_model.SmallModelHandling``). "auto" decides from the model's name, and from
its server when the name does not say (``model_info``; asked once, off the event loop, in
``prepare()`` before a turn's first request).

litellm's import (seconds) is done by a warm host process (``host_link``) or in a thread.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from traitlets import Enum, Float, Integer, Unicode, default, validate

from oi_kernel import config
from oi_kernel.core.types import Reply
from oi_kernel.errors import (
    LLMToolsUnsupportedError,
    NotConfiguredError,
)
from oi_kernel.llm import boundary, providers, remote
from oi_kernel.llm import local as local_model
from oi_kernel.llm.stream import CallbackError, Stream

if TYPE_CHECKING:  # both are imported where used: not needed before a kernel's first cell
    pass

PLACEHOLDER_KEY = "no-key-needed"


class LLM(config.Remembered):
    """Talks to the configured model through litellm. Its environment variables (each
    trait's ``env`` tag) are read by the resolver's environment step
    (``config.apply_environment``)."""

    model = Unicode(
        help="""The litellm model name, e.g. "gpt-4o-mini", "anthropic/claude-3-5-sonnet-latest"
        or "ollama_chat/llama3.1" (https://docs.litellm.ai/docs/providers). When api_base is set
        and the name has no provider prefix litellm knows, "openai/" is prepended, so
        "llama3.1" with an api_base means an OpenAI-compatible server. Default: $OI_MODEL; without
        it, no api_base and no *_API_KEY variable, "local/smollm2" (the small embedded offline
        model) when the "local" extra is installed (pip install "oi-kernel[local]").""",
    ).tag(config=True, env="OI_MODEL",
          doc_default="local/smollm2 when the local extra is installed and nothing else is "
          "configured, else empty")

    api_base = Unicode(
        help="""Base URL of the API, e.g. "http://localhost:8000/v1" for a local
        OpenAI-compatible server. Empty: the provider's default. Default: $OI_API_BASE.""",
    ).tag(config=True, env="OI_API_BASE")

    api_key = Unicode(
        help="""API key sent to the provider. Empty: litellm reads the provider's own variable
        (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); with an api_base and an openai/ model and no
        OPENAI_API_KEY either, a placeholder is sent, since local servers need no key but the
        openai SDK requires one. Default: $OI_API_KEY.""",
    ).tag(config=True, env="OI_API_KEY")

    temperature = Float(0.0, help="Sampling temperature.").tag(config=True)

    tool_mode = Enum(
        ["auto", "tools", "markdown"],
        "auto",
        help="""How the model proposes code: "tools" (function calling), "markdown" (fenced code
        blocks in the text) or "auto": tools when litellm says the model supports function
        calling or the request goes to an explicit api_base with an openai/ model, else
        markdown. Default: $OI_TOOL_MODE or "auto".""",
    ).tag(config=True, env="OI_TOOL_MODE")

    small_model = Enum(
        ["auto", "on", "off"],
        "auto",
        help="""Small-model mode: a short prompt with worked examples close to the instruction,
        the instruction's values named, drafts checked before you are asked, compact error
        feedback, fenced code instead of tool calls (with tool_mode "auto"), a reply that is
        only code recognised as code, and at most c.Engine.small_model_max_steps LLM calls per
        instruction. "auto": on for the embedded model and for models known to have up to
        ~8B parameters, from their name (qwen2.5-coder:1.5b, Llama-3.2-3B-Instruct, phi3:mini,
        a bare llama3.2) or, when the name does not say, from their server (Ollama's
        /api/show, an OpenAI-compatible server's /v1/models). `%model` shows the mode and
        why. Default: $OI_SMALL_MODEL or "auto".""",
    ).tag(config=True, env="OI_SMALL_MODEL")

    request_timeout = Float(
        120.0,
        help="""Seconds to wait for the server to connect, answer, or send the next piece of
        the stream before giving up.""",
    ).tag(config=True)

    max_retries = Integer(
        3,
        help="""Retries after HTTP 429, 5xx or a refused connection, with exponential backoff
        from 0.5 s (or the server's Retry-After, up to 30 s). Only before any text arrived.""",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._no_tools: dict[tuple[str, str], str] = {}  # (model, api_base) -> what it said
        self._told_small: set[tuple[str, str]] = set()  # small-model notices given
        self._plain_sampling: set[tuple[str, str]] = set()  # servers refusing repeat_penalty

    _pinned: Any = None  # the running turn's ModelSettings (``pinned``)

    def freeze(self) -> Any:
        """The model's settings now (a ``ModelSettings``: every ``c.LLM.*`` trait), frozen:
        what a turn uses."""
        return config.freeze_into(ModelSettings, self)

    def pinned(self, settings: Any) -> AbstractContextManager[None]:
        """A block in which the model is asked with ``settings`` (a turn's, from ``freeze``):
        a change to ``c.LLM.*`` meanwhile applies to the next turn."""
        return _pin(self, settings)

    @property
    def now(self) -> Any:
        """The settings requests use: the running turn's (``pinned``), else those now."""
        return self._pinned if self._pinned is not None else self.freeze()

    @default("model")
    def _default_model(self) -> str:
        """Without OI_MODEL or c.LLM.model (set before this is asked): the embedded model
        when nothing points at another one."""
        return self._embedded_default()


    @validate("model")
    def _within_policy(self, proposal: Any) -> Any:
        return config.check_floor(self, "model", proposal["value"])

    # -- cheap questions (no litellm import)

    def check_configured(self) -> None:
        """Raise NotConfiguredError when no model is set."""
        if not self.now.model.strip():
            raise NotConfiguredError(footer=local_model.unavailable_hint())
        if self.is_embedded:
            local_model.check_usable(self.now.model, parent=self)

    # -- the embedded offline model (local/..., see local_model.py)

    def _embedded_default(self) -> str:
        """``local/smollm2`` when nothing points at another model (no API base, no
        *_API_KEY in the environment) and the local extra is installed; else ""."""
        if not local_model.is_default(self.api_base, self.api_key):
            return ""
        self._pending_notice = local_model.DEFAULT_NOTICE
        return local_model.MODEL_NAME

    def take_notice(self) -> str:
        """A message to show the user once (e.g. that the embedded model is in use, or that
        small-model mode turned itself on for this model)."""
        if self.now.model != local_model.MODEL_NAME:
            self._pending_notice = ""
        notice, self._pending_notice = getattr(self, "_pending_notice", ""), ""
        key = (self.now.model, self.now.api_base)
        if not notice and self.now.small_model == "auto" and not self.is_embedded \
                and key not in self._told_small and self.is_small_model:
            self._told_small.add(key)
            notice = (f"Small-model mode is on for `{self.now.model}`: {self.small_model_verdict()[1]}. "
                      "It gives the model worked examples, checks its drafts against more "
                      "samples and asks for fenced code; `%model` says more, "
                      "OI_SMALL_MODEL=off turns it off.")
        return notice

    @property
    def is_embedded(self) -> bool:
        """Whether the model is the embedded one (``local/...``, run in this process)."""
        return local_model.is_local(self.now.model)

    @property
    def is_small_model(self) -> bool:
        """Whether small-model mode is on (see ``small_model``)."""
        return self.small_model_verdict()[0]

    def small_model_verdict(self) -> tuple[bool, str]:
        """(on, why) for small-model mode, from what is known now (no I/O)."""
        if self.now.small_model == "on":
            return True, "on (c.LLM.small_model / OI_SMALL_MODEL)"
        if self.now.small_model == "off":
            return False, "off (c.LLM.small_model / OI_SMALL_MODEL)"
        if self.is_embedded:
            return True, "auto: the embedded model (SmolLM2-135M)"
        size = providers.model_size(self.now.model, self.now.api_base)
        if size is None:
            return False, ("auto: the model's size is not known from its name or server, so it "
                           "is treated as a capable model (OI_SMALL_MODEL=on for a small one)")
        if size.small:
            return True, f"auto: {size.describe()}, up to ~8B counts as small"
        return False, f"auto: {size.describe()}, more than ~8B"

    async def learn_about_model(self) -> None:
        """Ask the model's server what the name does not say (once per server and model;
        a short timeout; off the event loop)."""
        if self.now.model.strip() and providers.worth_asking(self.now.model, self.now.api_base, self.is_embedded):
            from oi_kernel.llm import model_info

            await asyncio.to_thread(model_info.ask_server, *providers.server_key(self.now.model, self.now.api_base))

    def secrets(self) -> list[str]:
        """Key values to mask in anything shown or logged: api_key and every *_API_KEY."""
        from oi_kernel.safety.redact import per_environ

        keys = per_environ("api_keys", lambda: {v for k, v in os.environ.items()
                                                if k.endswith("_API_KEY")})
        values = {self.now.api_key} | keys
        return sorted((v for v in values if len(v.strip()) >= 4), key=len, reverse=True)

    # -- questions that need litellm

    def resolved_model(self) -> str:
        """The model name as passed to litellm (may import litellm)."""
        model = self.now.model.strip()
        if local_model.is_local(model):
            return model
        if self.now.api_base and "/" not in model:
            return f"openai/{model}"
        if self.now.api_base and model.split("/", 1)[0] not in boundary.load().provider_list:
            return f"openai/{model}"
        return model

    def uses_tools(self) -> bool:
        """Whether to offer the execute tool (True) or expect fenced code (False)."""
        if self.is_embedded or self.tools_refused():  # no function calling there
            return False
        if self.now.tool_mode != "auto":
            return self.now.tool_mode == "tools"
        if self.is_small_model:  # the worked examples and the short prompt are fenced code
            return False
        info = providers.server_info(self.now.model, self.now.api_base)
        if info is not None and info.tools is not None:  # the server said (Ollama)
            return info.tools
        model = self.resolved_model()
        if self.now.api_base and model.startswith("openai/"):
            return True
        try:
            return bool(boundary.load().supports_function_calling(model))
        except Exception:
            return False

    # -- context accounting (used by the engine's context budget)

    def tools_refused(self) -> str:
        """What the server said when it rejected tools for this model ("" if it did not)."""
        return self._no_tools.get((self.now.model, self.now.api_base), "")

    async def prepare(self) -> None:
        """Make sure litellm is imported and the model's server asked about it (once),
        without blocking the event loop."""
        here = not remote.serves(self)  # else the host prepares its own litellm
        litellm = await boundary.load_async(local=here)
        await self.learn_about_model()
        model = self.resolved_model() if self.now.model.strip() else ""
        if here and providers.is_ollama(model):
            providers.register_ollama(litellm, model, providers.server_info(self.now.model, self.now.api_base))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with litellm's bundled cl100k encoding (offline; approximate
        for non-OpenAI models). Cached, since the same messages are counted every request."""
        return boundary.count_tokens(text)

    def context_window(self) -> int | None:
        """The model's input limit according to litellm's (local) model map, if known."""
        if self.is_embedded:
            return local_model.get_model(self).n_ctx
        info = providers.server_info(self.now.model, self.now.api_base)
        if info is not None and info.context:
            return info.context
        try:
            info = boundary.load().get_model_info(self.resolved_model())
        except Exception:
            return None
        value = info.get("max_input_tokens") or info.get("max_tokens")
        return int(value) if value else None

    def supports_vision(self) -> bool:
        try:
            return bool(boundary.load().supports_vision(self.resolved_model()))
        except Exception:
            return False

    # -- the request

    async def sample(self, messages: list[dict], tools: list[dict] | None,
                     sampling: dict[str, Any]) -> Reply:
        """One more reply to a request already answered, not streamed to anyone: a draft to
        compare with (small-model consensus, ``core.consensus``)."""
        return await self.stream(messages, tools, sampling=sampling)

    async def stream(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
        sampling: dict[str, Any] | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Reply:
        """Send ``messages`` and stream the answer; see the module docstring. ``sampling``
        overrides request parameters for this call (e.g. ``temperature`` and ``seed``);
        ``on_reasoning`` gets the model's reasoning as it streams (``on_text`` never does)."""
        from oi_kernel.llm.failures import classify, final_error, tools_rejected

        self.check_configured()
        if remote.serves(self) and (hosted := await remote.stream(
                self, messages, tools, sampling, (on_text, on_retry, on_reasoning))):
            return hosted  # the warm host answered (llm/host_link.py)
        litellm = await boundary.load_async(local=True)  # the plain path: litellm here
        if self.is_embedded:
            local_model.register(litellm, parent=self)
        model = self.resolved_model()
        kwargs = {**self._request_kwargs(model, messages, tools), **(sampling or {})}
        # The embedded model ends its replies after the first code block itself.
        stop_after_block = self.is_small_model and not self.is_embedded and not tools
        attempts = self.now.max_retries + 1
        attempt = 0
        while attempt < attempts:
            attempt += 1
            stream = Stream(on_text, on_reasoning, stop_after_block)
            try:
                return await stream.run(litellm, kwargs)
            except CallbackError as exc:
                raise exc.original from None
            except Exception as exc:
                if not stream.started and providers.drop_rejected_sampling(kwargs, exc):
                    self._plain_sampling.add((self.now.model, self.now.api_base))
                    attempt -= 1  # a server that takes no repeat_penalty: ask again without it
                    continue
                if tools and not stream.started and (said := tools_rejected(exc)):
                    self._no_tools[(self.now.model, self.now.api_base)] = said
                    raise LLMToolsUnsupportedError(
                        f"The server does not take tools for {self.now.model!r}: {said}") from exc
                failure = classify(litellm, exc)
                delay = None if stream.started else failure.retry_delay(attempt)
                if delay is None or attempt == attempts:
                    raise final_error(self, litellm, failure, stream, attempt) from exc
                if on_retry is not None:
                    on_retry(
                        f"{failure.label}; retrying in {delay:.1f} s (attempt {attempt + 1} of {attempts})"
                    )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _request_kwargs(self, model: str, messages: list[dict], tools: list[dict] | None) -> dict:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": providers.request_messages(model, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": self.now.temperature,
            "timeout": self.now.request_timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if self.now.api_base:
            kwargs["api_base"] = providers.api_base_for(model, self.now.api_base)
        if self.is_small_model and not self.is_embedded:
            kwargs["max_tokens"] = local_model.LocalModel.max_tokens.default_value
            if (self.now.model, self.now.api_base) not in self._plain_sampling:
                kwargs.update(providers.no_repeat_penalty(model, self.now.api_base))
        if self.now.api_key:
            kwargs["api_key"] = self.now.api_key
        elif self.now.api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            # Local OpenAI-compatible servers need no key, but the openai SDK insists on one.
            kwargs["api_key"] = PLACEHOLDER_KEY
        return kwargs




@contextmanager
def _pin(llm: LLM, settings: Any) -> Iterator[None]:
    outer, llm._pinned = llm._pinned, settings
    try:
        yield
    finally:
        llm._pinned = outer


ModelSettings = config.frozen_class(
    LLM, "ModelSettings", __name__,
    "The model's settings as one turn uses them: every ``c.LLM.*`` trait, read once when the "
    "turn starts (``LLM.freeze``, part of the engine's ``TurnSettings``) and never changed "
    "while it runs.")
