"""The background import's prewarm (issue 42 item 1): after it, the first request through
litellm has almost nothing left to import. Each case runs in a fresh interpreter (the
import state is per process) against the scripted server over real HTTP.

Guarded against upgrades: when a litellm release moves its mock path (``prewarm`` returns
False) or defers other work to the first request, the assertions below fail, while the
kernel itself quietly falls back to the plain path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = """
import asyncio, json, sys
from tests import llm_server as S
from oi_kernel.llm import boundary
from oi_kernel.llm.client import LLM

boundary.own_process()
litellm = boundary.load()
warmed = boundary.prewarm(litellm) if sys.argv[1] == "prewarm" else None
with S.ScriptedLLMServer() as server:
    server.set_fallback(lambda body: S.text("Done."))
    llm = LLM(model="openai/scripted", api_base=server.url, api_key="sk-test-000")
    before = set(sys.modules)
    reply = asyncio.run(llm.stream([{"role": "user", "content": "say done"}], None))
    new = sorted(m for m in set(sys.modules) - before
                 if m.split(".")[0] in ("litellm", "openai"))
print(json.dumps({"warmed": warmed, "text": reply.text, "new": new}))
"""


def first_request(mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                          text=True, timeout=300, env=env, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_request_after_prewarm_imports_almost_nothing():
    """litellm 1.110.2: 3 modules left after the prewarm, 47 without it; 1.83.0: 4 and 15."""
    warm, cold = first_request("prewarm"), first_request("cold")
    assert warm["text"] == cold["text"] == "Done."
    assert warm["warmed"] is True
    assert len(warm["new"]) <= 6, warm["new"]
    assert len(cold["new"]) >= len(warm["new"]) + 10, cold["new"]  # the prewarm did it
