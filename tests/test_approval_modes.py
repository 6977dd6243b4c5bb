"""One list of approval modes (issue 41): ``core.approval_modes`` is the only declaration; the
engine's trait, the environment, profiles, ``%approval``, the administrator's policy, four-eyes,
``oi-kernel run`` and the JupyterLab extension (a generated TypeScript file) all read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from oi_kernel.core import approval_modes as A
from oi_kernel.core import four_eyes
from oi_kernel.core.settings import EngineSettings
from oi_kernel.session import policy as P
from oi_kernel.session import profiles

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "labextension" / "src" / "approvalModes.ts"


@pytest.mark.unit
def test_the_extension_reads_the_generated_list_and_it_is_current():
    assert GENERATED.read_text() == A.typescript(), (
        "labextension/src/approvalModes.ts is stale: run "
        "`python -m oi_kernel.core.approval_modes > labextension/src/approvalModes.ts` "
        "and rebuild the extension (labextension/build.sh)")
    protocol = (ROOT / "labextension" / "src" / "protocol.ts").read_text()
    assert "from './approvalModes'" in protocol
    assert "'four-eyes-all'" not in protocol  # no second spelling of the modes


@pytest.mark.unit
def test_every_python_reader_takes_the_one_list():
    assert tuple(EngineSettings.class_traits()["approval"].values) == A.NAMES
    assert four_eyes.APPROVALS == A.NAMES
    assert profiles.SETTINGS["approval"].choices == A.NAMES
    assert P.APPROVAL_RANK == A.RANK
    assert set(four_eyes.MODES) == {"four-eyes", "four-eyes-all"}
    for mode in A.MODES:
        assert f"'{mode.name}' ({mode.help})" in EngineSettings.class_traits()["approval"].help


@pytest.mark.unit
def test_the_cli_offers_the_modes_that_need_nobody(capsys):
    from oi_kernel.cli import headless
    from oi_kernel.cli.app import build_parser

    assert headless.APPROVALS == A.UNATTENDED == ("never", "risky")
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "x.ipynb", "--approval", "always"])
    assert "choose from never, risky" in capsys.readouterr().err.replace("'", "")


@pytest.mark.unit
def test_the_policy_floor_order_is_by_rank():
    assert A.ORDER == "four-eyes-all > four-eyes > always > risky > never"
    assert P.APPROVAL_ORDER == A.ORDER


@pytest.mark.unit
@pytest.mark.parametrize("mode,every,unsafe", [
    ("always", True, False), ("risky", False, True), ("never", False, False),
    ("four-eyes", True, False), ("four-eyes-all", True, False)])
def test_when_a_step_asks_follows_the_table(mode, every, unsafe):
    from oi_kernel.core.steps import _asks

    assert _asks(mode, None) is every
    assert A.asks_unsafe(mode) is unsafe


@pytest.mark.unit
def test_four_eyes_rules_follow_the_table():
    class Flag:
        severity = "high"

    assert four_eyes.required(("four-eyes-all",), [])
    assert not four_eyes.required(("four-eyes",), [])
    assert four_eyes.required(("four-eyes",), [Flag()])
    assert not four_eyes.required(("always", "risky"), [Flag()])
    assert four_eyes.why("four-eyes-all") == "every step needs"
    assert "high risk flag" in four_eyes.describe("four-eyes")
    assert four_eyes.describe("never") == ""
