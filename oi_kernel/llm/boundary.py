"""The one place litellm is imported: lazily, off the event loop, without side effects on
the process that imports us.

``import litellm`` costs seconds and ~165 MB, so it happens in a daemon thread started by
``warm_up()`` or off the event loop on the first request; nothing imports it at module
import time. litellm downloads its price table when it is imported unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set: the variable is set for the import only and the
environment put back as it was. Process-wide settings (no "Give Feedback" banners; work
that cannot change a request or the reply we read skipped: ``fastpath``; the objects of the
import left out of full garbage collections; library log lines sent to the kernel's log,
not the cell: ``library_logs``) are applied only by a front door that owns the
process: the Open Interpreter kernel calls ``own_process()``; inside a user's IPython
(``%%oi``) or script (the API), litellm and the openai SDK are left as the user set them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import sys
import threading
from collections.abc import Iterator
from types import ModuleType

from oi_kernel.llm import host_link, library_logs

COST_MAP_ENV = "LITELLM_LOCAL_MODEL_COST_MAP"

_litellm: ModuleType | None = None
_import_lock = threading.Lock()
_warm_thread: threading.Thread | None = None
_owned = False


@contextlib.contextmanager
def _local_cost_map() -> Iterator[None]:
    """``LITELLM_LOCAL_MODEL_COST_MAP=True`` while litellm is imported (it reads it then)."""
    before = os.environ.get(COST_MAP_ENV)
    if before is None:
        os.environ[COST_MAP_ENV] = "True"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(COST_MAP_ENV, None)


def load() -> ModuleType:
    """litellm, imported once (blocking; call it off the event loop). While this kernel's
    warm host serves (``host_link``), what stands for it there: ``remote.RemoteLitellm``."""
    if _litellm is None and (link := host_link.link()) is not None and link.wait():
        from oi_kernel.llm.remote import RemoteLitellm

        return RemoteLitellm(link, load_local, count_local)  # type: ignore[return-value]
    return load_local()


def load_local() -> ModuleType:
    """litellm imported in this process, once (blocking)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            with _local_cost_map():
                import litellm
            _litellm = litellm
            if not library_logs.debugging_asked():
                # its exception mapping prints a "Give Feedback / Get Help" banner to stdout
                # on every failed request: in ``%%oi`` that is the user's cell
                litellm.suppress_debug_info = True
            if _owned:
                _claim(litellm)
            host_link.release()  # litellm is here now: no request goes to a host
    return _litellm


def own_process() -> None:
    """This process is ours (the kernel): quieten litellm and take the SDK fast path."""
    global _owned

    with _import_lock:
        _owned = True
        library_logs.route()
        if _litellm is not None:
            _claim(_litellm)


def owns_process() -> bool:
    """Whether ``own_process()`` was called: this process is the Open Interpreter kernel."""
    return _owned


def _claim(litellm: ModuleType) -> None:
    """Process-wide settings for a process that is ours. ``gc.freeze()`` after the import:
    litellm and the openai SDK leave ~300,000 objects that live as long as the process, and
    every full collection walked them all (~170 ms on the event loop, every ~80 turns of a
    long session); frozen, a full collection takes ~7 ms (benchmarks/README.md)."""
    from oi_kernel.llm import fastpath

    library_logs.route()  # its import made handlers that write into the cell
    fastpath.skip_noop_request_transform()
    fastpath.iterate_sdk_streams_directly()
    fastpath.skip_base64_scan_for_logging()
    fastpath.skip_cost_of_unread_stream()
    gc.freeze()


# While litellm imports in the background, the thread that serves the user's cells gets the
# GIL back after at most this long (Python's default is 5 ms; each relay step of a cell
# waited up to that for the import thread, making cells ~2x slower in the first seconds).
IMPORT_SWITCH_INTERVAL_S = 0.0005
PREWARM_MODEL = "openai/oi-kernel-warm-up"  # a mock request's model name (nothing is sent)


def warm_up(hosted: bool = True) -> None:
    """Start importing litellm in a daemon thread, so the first request does not wait; in
    a process that is ours, a warm host imports it instead (``host_link``) unless
    ``hosted`` is False: the model runs in this process (the embedded model)."""
    global _warm_thread
    with _import_lock:
        if _litellm is not None or _warm_thread is not None:
            return
        if not hosted:
            host_link.release()
        elif _owned and host_link.start():  # a process of its own imports it (or has)
            return
        _warm_thread = threading.Thread(target=_background_import, name="oi-litellm-import",
                                        daemon=True)
        _warm_thread.start()


def _background_import() -> None:
    """``load()`` with a short GIL switch interval meanwhile, in a process that is ours."""
    before = sys.getswitchinterval()
    if _owned:
        sys.setswitchinterval(min(before, IMPORT_SWITCH_INTERVAL_S))
    try:
        litellm = load_local()
        if _owned:
            prewarm(litellm)
    finally:
        if _owned:
            sys.setswitchinterval(before)


def prewarm(litellm: ModuleType) -> bool:
    """Do ahead what the first request would do after the import: load the tokenizer that
    counts the context, and run one streamed completion through litellm's own mock path
    (no HTTP: ``mock_response``), which imports the ~65 modules and builds the pydantic
    schemas that litellm defers to its first request (0.3 s of CPU with litellm 1.110,
    0.7 s of the first instruction's wall time on a loaded machine). Only when no litellm
    callback would see the mock call. Returns whether it ran; a litellm whose mock path
    moved is left alone (logged, never said to the user)."""
    from oi_kernel.llm import fastpath

    count_tokens("warm up")
    if not fastpath.logs_nothing(litellm):
        return False

    async def one_mock_stream() -> None:
        reply = await litellm.acompletion(
            model=PREWARM_MODEL, messages=[{"role": "user", "content": "warm up"}],
            mock_response="ok", stream=True)
        async for _ in reply:
            pass

    try:
        asyncio.run(one_mock_stream())
    except Exception:
        logging.getLogger(__name__).info("litellm prewarm failed: skipped", exc_info=True)
        return False
    return True



async def load_async(local: bool = False) -> ModuleType:
    """litellm, imported in a worker thread when it is not yet (``local``: in this process,
    never what stands for it in a warm host)."""
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(load_local if local else load)


@functools.lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Tokens of ``text`` with litellm's bundled cl100k encoding (offline; approximate for
    non-OpenAI models); a quarter of the characters when that is not available."""
    if _litellm is None and host_link.link() is not None:
        litellm = load()
        if not isinstance(litellm, ModuleType):  # the warm host counts, same encoding
            try:
                return litellm.count_tokens(text)  # type: ignore[attr-defined]
            except Exception:
                return len(text) // 4 + 1
    return count_local(text)


def count_local(text: str) -> int:
    """``count_tokens`` with litellm in this process."""
    try:
        load_local()
        from litellm.litellm_core_utils.default_encoding import encoding

        return len(encoding.encode(text, disallowed_special=()))
    except Exception:
        return len(text) // 4 + 1
