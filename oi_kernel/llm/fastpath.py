"""Work done for every request that cannot change what is sent or the reply we read,
skipped: the openai SDK's request transform when it cannot change the body and the
generator it wraps around a stream for each ``async for``, litellm's scan of the whole
conversation for base64 images to shorten in a logging payload nobody reads, its pricing of
a stream before any of it arrived, and its success-logging pass after the last chunk when
no callback would receive it.

Applied only where oi_kernel owns the process (``boundary.own_process``); each falls back to
litellm's own behaviour when the internals it relies on moved (tests/test_llm.py fails then).
"""

from __future__ import annotations

import functools
from typing import Any


def skip_noop_request_transform() -> None:
    """Let the openai SDK send a chat request body as is when its transform would not
    change it.

    Before each request the SDK walks the whole body against its TypedDicts to rename
    aliased keys and format dates and files. Chat-completion parameters have none of
    those, yet the walk costs ~0.4 ms per message, on the event loop: after 200 turns
    (800 messages) it took 0.3 s per request and grew with every turn. The replacement
    returns a plain-JSON body unchanged when the expected type has nothing to transform,
    and calls the SDK's own function otherwise, so the bytes sent are the same.
    """
    try:
        from openai._utils import is_given
        from openai.resources.chat.completions import completions as module

        original = module.async_maybe_transform
    except (ImportError, AttributeError):
        return
    if getattr(original, "_oi_skips_noop", False):
        return

    async def transform(data: object, expected_type: object) -> Any:
        if isinstance(data, dict) and not _type_transforms(expected_type):
            given = {k: v for k, v in data.items() if is_given(v)}  # as the SDK does
            if _is_plain_json(given):
                return given
        return await original(data, expected_type)

    transform._oi_skips_noop = True  # type: ignore[attr-defined]
    module.async_maybe_transform = transform


def skip_base64_scan_for_logging() -> None:
    """Let litellm put the messages into its logging payload as they are.

    After every streamed reply litellm builds that payload twice (its sync and async
    success handlers), each time copying the whole conversation and running a regex over
    every string to shorten base64 images (``MAX_BASE64_LENGTH_FOR_LOGGING``). The payload
    only goes to logging callbacks; the kernel registers none. It cost ~1 ms per 100
    messages per request and was the largest part of a turn's CPU that grew with the
    session (benchmarks/README.md). 0 is litellm's own setting for "do not shorten";
    what the model receives is not touched.
    """
    try:
        from litellm.litellm_core_utils import logging_utils
    except ImportError:
        return
    if isinstance(getattr(logging_utils, "MAX_BASE64_LENGTH_FOR_LOGGING", None), int):
        logging_utils.MAX_BASE64_LENGTH_FOR_LOGGING = 0


SUCCESS_CALLBACK_LISTS = ("callbacks", "success_callback", "_async_success_callback")


def logs_nothing(litellm: Any) -> bool:
    """Whether a stream may end without litellm's success logging (asked only in our
    process, ``boundary.owns_process()``): no success callback registered and no
    ``max_budget`` (whose spend that logging counts).

    What is skipped is the pass litellm makes when asked for a chunk after the last one:
    it rebuilds the whole reply from its chunks once more (the same build that gave the
    usage already sent), deep-copies it and hands it to its success handlers (one as a
    task on the event loop, one in a worker thread) to log it and compute its cost for the
    callbacks. With no callback nothing reads any of it: 13% of a short request's CPU with
    litellm 1.83, 30% with 1.110 (``benchmarks/llm_calls.py``, benchmarks/LLM_CALLS.md).
    """
    if getattr(litellm, "max_budget", None):
        return False
    return not any(getattr(litellm, name, None) for name in SUCCESS_CALLBACK_LISTS)


def usage_was_last(response: Any) -> bool:
    """Whether litellm's stream has given its last chunk (the one with the usage), so that
    asking for another would only run its success logging. litellm sets
    ``sent_stream_usage`` right before it returns that chunk (1.83 to 1.110); False when
    the attribute is gone (its internals moved): the stream is then read to its end."""
    return getattr(response, "sent_stream_usage", None) is True


def iterate_sdk_streams_directly() -> None:
    """Let ``async for`` over an openai SDK stream read its chunk iterator itself.

    The SDK's ``AsyncStream.__aiter__`` is an async generator wrapping the stream's own
    iterator. litellm starts a new ``async for`` over the stream for every chunk and returns
    from it after one item, so each chunk leaves a half-run wrapper generator behind, which
    the event loop must finalise: a wake-up through its self-pipe and an ``aclose()`` task,
    ~15 per short reply. Returning the iterator itself gives the same items in the same
    order (the wrapper never closed it either) without them. Left alone when the SDK's
    stream no longer looks like that.
    """
    import inspect

    try:
        from openai._streaming import AsyncStream
    except ImportError:
        return
    original = AsyncStream.__dict__.get("__aiter__")
    if original is None or getattr(original, "_oi_direct", False) \
            or not inspect.isasyncgenfunction(original):
        return

    def __aiter__(self: Any) -> Any:  # noqa: N807
        iterator = getattr(self, "_iterator", None)
        if inspect.isasyncgen(iterator):
            return iterator
        return original(self)

    __aiter__._oi_direct = True  # type: ignore[attr-defined]
    AsyncStream.__aiter__ = __aiter__  # type: ignore[method-assign]


COST_CALCULATORS = ("response_cost_calculator", "_response_cost_calculator")  # 1.110, 1.83


def skip_cost_of_unread_stream() -> None:
    """Let litellm leave the cost of a stream it has just opened unpriced.

    When ``acompletion`` returns a stream (before any of it arrived), litellm prices that
    stream object for its ``_hidden_params["response_cost"]``: a full cost calculation
    (model-map lookups, provider checks) of a reply with no tokens yet, whose answer is 0.0
    or None. The cost the user sees is computed from the usage at the end (``Stream._usage``);
    the stream's hidden cost is read by nobody in our process. It was ~9% of a short
    request's CPU with litellm 1.110 (``benchmarks/llm_calls.py --profile``). For every other
    result (a whole reply, a chunk) litellm's own calculation runs. When litellm renames its
    calculator or its stream class, nothing is patched and litellm prices as before.
    """
    try:
        from litellm.litellm_core_utils.litellm_logging import Logging
        from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
    except ImportError:
        return
    for name in COST_CALCULATORS:
        original = Logging.__dict__.get(name)
        if not callable(original) or getattr(original, "_oi_skips_stream", False):
            continue

        def calculator(self: Any, result: Any = None, *args: Any, _original: Any = original,
                       **kwargs: Any) -> Any:
            if type(result) is CustomStreamWrapper:
                return None
            return _original(self, result, *args, **kwargs)

        functools.update_wrapper(calculator, original)
        calculator._oi_skips_stream = True  # type: ignore[attr-defined]
        setattr(Logging, name, calculator)


def _is_plain_json(data: object) -> bool:
    """Whether ``data`` is dicts with str keys, lists, str, numbers, bool and None only.

    Walks every message of the request, so it runs once per message per request: exact
    types are checked first (the messages are plain dicts of strings), subclasses after.
    """
    stack = [data]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is int or kind is float or kind is bool or item is None:
            continue
        if isinstance(item, dict):
            for key, value in item.items():
                if type(key) is not str and not isinstance(key, str):
                    return False
                if type(value) is not str:
                    push(value)
        elif isinstance(item, list):
            extend(item)
        elif not isinstance(item, (str, int, float)):
            return False
    return True


@functools.lru_cache(maxsize=64)
def _type_transforms(expected_type: Any) -> bool:
    """Whether the SDK's transform can change data of this type (True when unsure)."""
    try:
        return _transforms(expected_type, set())
    except Exception:
        return True


def _transforms(tp: Any, seen: set[int]) -> bool:
    import typing

    import typing_extensions
    from openai._utils._transform import PropertyInfo

    if tp in (str, int, float, bool, type(None), object, Any):
        return False
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        meta = tp.__metadata__
        if any(isinstance(m, PropertyInfo) and (m.alias or m.format) for m in meta):
            return True
        return _transforms(args[0], seen)
    if origin is typing.Literal:
        return False
    if origin is not None:  # Required[...], Union[...], list[...], Iterable[...], dict[...]
        return any(_transforms(a, seen) for a in args if a is not Ellipsis)
    if typing_extensions.is_typeddict(tp):
        if id(tp) in seen:
            return False
        seen.add(id(tp))
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        return any(_transforms(h, seen) for h in hints.values())
    return True  # a model class, a date, something new: let the SDK handle it
