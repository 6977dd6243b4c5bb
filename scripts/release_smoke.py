"""The release smoke test scripts/release-check runs inside a fresh venv holding only the built
wheel (outside the source tree): one instruction through the Open Interpreter kernel and one
``%%oi`` cell in an ordinary python3 kernel, both against the scripted LLM server at the URL
given (which scripts/release-check starts from the source tree). Exit 0 when both print 42.

    python release_smoke.py http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import os
import sys
import tempfile

from jupyter_client.manager import start_new_kernel


def run(kernel_name: str, cells: list[str], env: dict[str, str]) -> tuple[str, str]:
    """Run ``cells`` in a new kernel; the last cell's reply status and everything it showed."""
    km, kc = start_new_kernel(kernel_name=kernel_name, env=env, startup_timeout=120)
    try:
        for code in cells:
            msg_id = kc.execute(code)
            shown: list[str] = []
            while True:
                msg = kc.get_iopub_msg(timeout=120)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    shown.append(content["text"])
                elif kind in ("display_data", "update_display_data", "execute_result"):
                    shown.append(content["data"].get("text/plain", ""))
                elif kind == "error":
                    shown.append("\n".join(content["traceback"]))
                elif kind == "status" and content["execution_state"] == "idle":
                    break
            reply = kc.get_shell_msg(timeout=60)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=60)
        return reply["content"]["status"], "".join(shown)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> int:
    url = sys.argv[1]
    logs = tempfile.mkdtemp(prefix="oi-release-logs-")
    env = {**os.environ, "OI_MODEL": "openai/scripted", "OI_API_BASE": url,
           "OI_API_KEY": "sk-test-not-a-real-key", "OI_AUTO_RUN": "1", "OI_LOG_DIR": logs,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)
    failures = 0
    for label, kernel, cells in (
        ("instruction in the open-interpreter kernel", "open-interpreter",
         ["print six times seven"]),
        ("%%oi in a python3 kernel", "python3",
         ["%load_ext oi_kernel", "%%oi -y\nprint six times seven"]),
    ):
        status, shown = run(kernel, cells, env)
        ok = status == "ok" and "42" in shown
        failures += not ok
        print(f"{'ok' if ok else 'FAILED'}: {label} (status {status})")
        if not ok:
            print(shown, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
