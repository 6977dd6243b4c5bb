"""The environment a kernel under test gets: the scripted model, a fake key, and a log
directory of its own (one definition for every test module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEST_KEY = "sk-test-not-a-real-key-123456"


def oi_env(server: Any, tmp: Path, **extra: str) -> dict[str, str]:
    """Settings for a kernel that talks to ``server`` (a ScriptedLLMServer) and logs under
    ``tmp/logs``; ``extra`` adds or overrides variables."""
    env = {
        "OI_MODEL": "openai/scripted",
        "OI_API_BASE": server.url,
        "OI_API_KEY": TEST_KEY,
        "OI_LOG_DIR": str(Path(tmp) / "logs"),
    }
    env.update(extra)
    return env
