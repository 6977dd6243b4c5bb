"""Preview through ``%%oi`` in an ordinary IPython kernel (issue 44): the copy is a fork of
the user's own kernel process; ``p`` at the stdin question shows what the step would change
in the user's namespace and files, nothing real changes, then ``y`` runs it."""

from __future__ import annotations

from tests import llm_server as S
from tests.test_magics import start_kernel


def test_p_previews_a_magic_step_in_a_fork_of_the_users_kernel(llm_server, tmp_path):
    (tmp_path / "table.csv").write_text("a\n1\n")
    with start_kernel(llm_server, tmp_path, OI_APPROVAL_UI="stdin") as ks:
        assert ks.execute("rows = [1, 2]").status == "ok"
        llm_server.enqueue(S.tool_call("rows.append(3)\nopen('table.csv', 'w').write('b\\n')\n"
                                       "print('len', len(rows))"), S.text("done"))
        seen = {}

        def answer(prompt: str) -> str:
            if "nothing real changed" not in prompt:
                return "p"
            seen["prompt"] = prompt
            seen["file"] = (tmp_path / "table.csv").read_text()
            return "y"

        result = ks.execute("%%oi\nadd a row", stdin=answer, timeout=120)
        assert result.status == "ok", result.text
        after = ks.execute("print(rows)")
    prompt = seen["prompt"]
    assert "    len 3" in prompt, prompt
    assert "rows: list[2] → list[3]" in prompt or "rows: list[2] → [3]" in prompt, prompt
    assert "table.csv (modified, 4 bytes → 2 bytes)" in prompt, prompt
    assert seen["file"] == "a\n1\n"  # untouched while the question waited
    assert after.stdout == "[1, 2, 3]\n"  # Run appended once, for real
    assert (tmp_path / "table.csv").read_text() == "b\n"
