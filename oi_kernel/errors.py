"""A small error hierarchy whose messages say what happened and how to fix it.

Everything the user can cause or repair is an ``OIError``; the kernel and the
magic show ``str(error)`` as is, so each message is written for a person.
"""

from __future__ import annotations


class OIError(Exception):
    """Base of every error oi_kernel raises on purpose."""


class ConfigError(OIError):
    """A setting is missing or invalid."""


class NotConfiguredError(ConfigError):
    """No LLM is configured."""

    def __init__(self, detail: str = "", footer: str = "") -> None:
        self.footer = footer  # e.g. why the embedded offline model is not used
        text = (
            "No language model is configured.\n"
            "Set one with the magic `%model NAME` (for example `%model gpt-4o-mini` or\n"
            "`%model ollama_chat/qwen2.5-coder:1.5b`), or before starting Jupyter set OI_MODEL\n"
            "(and OI_API_KEY, or the provider's own variable such as OPENAI_API_KEY; OI_API_BASE\n"
            "for a local OpenAI-compatible server).\n"
            "Model names are litellm's: https://docs.litellm.ai/docs/providers"
        )
        if footer:
            text += "\n" + footer
        super().__init__(f"{detail}\n{text}" if detail else text)


class PolicyError(ConfigError):
    """The administrator's policy refuses something; the message names the policy file."""


class LLMError(OIError):
    """The LLM call failed; ``partial_text`` keeps what streamed before the failure."""

    def __init__(self, message: str, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text


class LLMAuthError(LLMError):
    """The provider rejected the credentials."""


class LLMConnectionError(LLMError):
    """The provider could not be reached (refused, DNS, TLS)."""


class LLMTimeoutError(LLMError):
    """The provider did not answer in time."""


class LLMRateLimitError(LLMError):
    """HTTP 429 after the allowed retries."""


class LLMStreamCutError(LLMError):
    """The stream ended before the reply was complete."""


class LLMToolsUnsupportedError(LLMError):
    """The server rejected the ``tools`` of the request; the engine asks again without them
    (fenced code instead), in the same turn."""


class ChildKernelError(OIError):
    """The child kernel could not be started or died."""


class ChildDiedError(ChildKernelError):
    """The child kernel died while running code."""


class ApprovalUnavailableError(OIError):
    """Code needs approval but this frontend can't ask for it."""

    def __init__(self) -> None:
        super().__init__(
            "This code was not run: it needs your approval, and this frontend can ask neither\n"
            "with the approval card nor on stdin (papermill, nbclient and other batch runs\n"
            "cannot). To let the model run code without asking, put `%auto_run on` in a cell\n"
            "before this one, or set OI_AUTO_RUN=1 in the environment that starts the kernel\n"
            "(Jupyter, papermill, nbclient); `oi-kernel run` does that by default."
        )


class InstructionTooLongError(OIError):
    """An instruction is longer than ``Engine.max_instruction_chars``."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(
            f"This instruction is {length:,} characters long; the limit is {limit:,} "
            f"(about {limit // 4:,} tokens), so nothing was sent to the model.\n"
            "Put large data in a file and refer to it by name (the code can read it), or raise "
            "the limit with OI_MAX_INSTRUCTION_CHARS / c.Engine.max_instruction_chars."
        )
