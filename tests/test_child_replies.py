"""Every reply from the child kernel reaches its request, however the requests and replies
cross (issue 42, "nothing hangs"): a real child kernel through ``ChildKernel``.

jupyter_client's ``Session.send`` writes to an asyncio socket through a plain shadow of it;
a send consumes the socket's edge-triggered wake-up, so a reply that arrived during it woke
no reader and every later reply stayed unread behind it: a cell waited forever on an idle
child (once in ~25 runs of tests/test_early_checkpoint.py's many-turns test under load).
Here requests are sent while the replies of earlier ones arrive, in 400 rounds (~1,000
requests)."""

from __future__ import annotations

import asyncio
import random

import pytest

from oi_kernel.execution.child import ChildKernel

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]

ROUNDS = 400


async def _crossing_requests(tmp_path) -> list[str]:
    child = ChildKernel(cwd=str(tmp_path))
    await child.ensure_running()
    rng = random.Random(42)
    stuck: list[str] = []
    try:
        for round_ in range(ROUNDS):
            # a silent execution (a probe call) and, while its reply is on its way, more
            first = child.submit_execute("pass", silent=True, store_history=False)
            await asyncio.sleep(rng.choice((0, 0, 0.0002, 0.0005, 0.001)))
            rest = [child.submit_execute(f"r = {round_}", silent=i % 2 == 0)
                    for i in range(rng.randint(1, 3))]
            _, pending = await asyncio.wait([first, *rest], timeout=20)
            if pending:
                stuck.append(f"round {round_}: {len(pending)} of {len(rest) + 1} replies "
                             "never arrived")
                break
    finally:
        await child.shutdown()
    return stuck


def test_requests_sent_while_replies_arrive_all_get_their_reply(tmp_path):
    assert asyncio.run(_crossing_requests(tmp_path)) == []
