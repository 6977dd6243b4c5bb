"""Bad settings are reported and replaced by defaults, never fatal (oi_kernel.config)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from traitlets import Enum, Float, Integer, observe
from traitlets.config import Config, Configurable

from oi_kernel import config
from oi_kernel.core.engine import Engine
from oi_kernel.errors import OIError
from oi_kernel.execution.child import ChildKernel
from oi_kernel.llm.client import LLM


@pytest.fixture(autouse=True)
def _no_leftover_warnings() -> Iterator[None]:
    config.take_warnings()
    yield
    config.take_warnings()


class Settings(Configurable):
    steps = Integer(10, config=True, help="How many steps.")
    mode = Enum(["a", "b"], "a", config=True, help="Which mode.")
    ratio = Float(0.5, config=True, help="A ratio.")

    @observe("steps")
    def _positive(self, change: dict[str, Any]) -> None:
        if change["new"] < 1:
            raise OIError("steps must be at least 1")

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)


def settings(**values: Any) -> Settings:
    return Settings(config=Config({"Settings": values}))


def test_good_values_load_without_warnings() -> None:
    s = settings(steps=3, mode="b", ratio=0.25)
    assert (s.steps, s.mode, s.ratio) == (3, "b", 0.25)
    assert config.take_warnings() == []


@pytest.mark.parametrize(
    ("values", "bad", "reason"),
    [
        ({"steps": "ten", "mode": "b"}, "steps", "expected an int"),
        ({"mode": "c", "ratio": 0.1}, "mode", "any of ['a', 'b']"),
        ({"steps": 0, "mode": "b"}, "steps", "at least 1"),  # rejected by an observer
    ],
)
def test_a_bad_value_is_ignored_and_the_rest_kept(values: dict, bad: str, reason: str) -> None:
    s = settings(**values)
    assert getattr(s, bad) == Settings.class_traits()[bad].default_value
    for name, value in values.items():
        if name != bad:
            assert getattr(s, name) == value
    [warning] = config.take_warnings()
    assert f"c.Settings.{bad} = {values[bad]!r}" in warning
    assert reason in warning
    assert Settings.class_traits()[bad].help in warning


def test_warnings_are_taken_once() -> None:
    settings(steps="x")
    assert len(config.take_warnings()) == 1
    assert config.take_warnings() == []


@pytest.mark.parametrize(
    ("raw", "expected", "warned"),
    [("", 10, False), ("7", 7, False), ("abc", 10, True), ("0", 10, True), (" 3 ", 3, False)],
)
def test_env_int(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int, warned: bool) -> None:
    monkeypatch.setenv("OI_TEST_N", raw)
    assert config.env_int("OI_TEST_N", 10, minimum=1, help="The n.") == expected
    warnings = config.take_warnings()
    assert bool(warnings) == warned
    if warned:
        assert f"OI_TEST_N={raw.strip()!r}" in warnings[0] and "The n." in warnings[0]


@pytest.mark.parametrize(
    ("raw", "expected"), [("", None), ("on", True), ("0", False), ("YES", True), ("maybe", None)]
)
def test_env_flag(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool | None) -> None:
    monkeypatch.setenv("OI_TEST_FLAG", raw)
    assert config.env_flag("OI_TEST_FLAG") is expected
    assert bool(config.take_warnings()) == (raw == "maybe")


def test_env_float_and_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OI_TEST_F", "nan")
    assert config.env_float("OI_TEST_F", 2.0, minimum=0) == 2.0
    monkeypatch.setenv("OI_TEST_F", "0.5")
    assert config.env_float("OI_TEST_F", 2.0, minimum=0) == 0.5
    monkeypatch.setenv("OI_TEST_C", "Markdown")
    assert config.env_choice("OI_TEST_C", ["tools", "markdown"], "tools") == "markdown"
    monkeypatch.setenv("OI_TEST_C", "yaml")
    assert config.env_choice("OI_TEST_C", ["tools", "markdown"], "tools") == "tools"
    assert len(config.take_warnings()) == 2


class _Nothing:
    sandboxed = False


def test_the_real_classes_survive_bad_environment_and_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OI_MAX_STEPS", "abc")
    monkeypatch.setenv("OI_AUTO_RUN", "maybe")
    monkeypatch.setenv("OI_TOOL_MODE", "yaml")
    monkeypatch.setenv("OI_CHILD_STARTUP_TIMEOUT", "-1")
    cfg = Config(
        {
            "Engine": {"max_steps": "ten", "max_output_chars": 123},
            "LLM": {"request_timeout": "soon"},
            "ChildKernel": {"startup_timeout": [1]},
        }
    )
    engine = Engine(_Nothing(), _Nothing(), config=cfg, llm=LLM(config=cfg))
    child = ChildKernel(config=cfg)
    assert (engine.max_steps, engine.max_output_chars, engine.approval) == (10, 123, "always")
    assert (engine.llm.request_timeout, engine.llm.tool_mode) == (120.0, "auto")
    assert child.startup_timeout == 60.0
    text = "\n".join(config.take_warnings())
    for fragment in (
        "c.Engine.max_steps = 'ten'",
        "c.LLM.request_timeout = 'soon'",
        "c.ChildKernel.startup_timeout = [1]",
        "OI_MAX_STEPS='abc'",
        "OI_AUTO_RUN='maybe'",
        "OI_TOOL_MODE='yaml'",
        "OI_CHILD_STARTUP_TIMEOUT='-1'",
    ):
        assert fragment in text, fragment
