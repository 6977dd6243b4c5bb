"""Settings resolved once (issue 41): every setting of a session with its value and where it
came from (default, environment, config, keyword argument, profile, the administrator's
policy, a session command); ``%config`` / ``%oi config`` shows them; a malformed setting in any
source says which source and how to fix it. Sessions from ``build_session`` (the assembly of
every front door), and real kernels at the end."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config, Configurable

from oi_kernel import config
from oi_kernel.approval.approvers import RefuseApprover
from oi_kernel.errors import OIError
from oi_kernel.session import commands
from oi_kernel.session.assembly import build_session
from oi_kernel.session.policy import load_policy
from oi_kernel.session.profiles import ProfileError
from oi_kernel.session.resolved import resolve
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env
from tests.test_policy import write_policy
from tests.test_profiles import isolated, write_profile  # noqa: F401 (a fixture)


def new_session(tmp: Path, cfg: Config | None = None, rules: dict[str, Any] | None = None,
                **kw: Any) -> Any:
    admin = tmp / "admin"
    admin.mkdir(exist_ok=True)
    if rules:
        write_policy(admin, rules)
    parent = Configurable(config=cfg or Config())
    return build_session("api", approver=RefuseApprover(), parent=parent,
                         policy=load_policy([admin]), logging=False, **kw)


def command(s: Any, line: str, prefix: str = "%") -> str:
    said: list[str] = []
    asyncio.run(commands.run_command(commands.CommandContext(s, said.append, lambda: None),
                                     line))
    return "\n".join(said)


@pytest.mark.unit
def test_each_value_remembers_its_source(isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_STEP_TIMEOUT", "300")
    cfg = Config()
    cfg.Engine.max_images = 5
    s = new_session(isolated, cfg, engine_options={"max_output_chars": 900})
    settings = resolve(s)
    assert settings["step_timeout"].source == "OI_STEP_TIMEOUT"
    assert settings["step_timeout"].value == 300
    assert settings["max_images"].source == "c.Engine.max_images"
    assert settings["max_output_chars"].source == "keyword argument"
    assert settings["reply_reserve"].source == "default"
    command(s, "approval risky")
    assert resolve(s)["approval"].source == "%approval"
    command(s, "auto_run on")
    assert resolve(s)["approval"].source == "%auto_run"
    assert settings["approval"].source == "default"  # the earlier object did not change
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.items[0].value = 1  # type: ignore[misc]


@pytest.mark.unit
def test_a_profile_and_clearing_it(isolated):  # noqa: F811
    write_profile(isolated / "project" / ".oi" / "profiles", "team",
                  "max_steps: 4\ntemperature: 0.5\n")
    s = new_session(isolated)
    command(s, "profile team")
    assert resolve(s)["max_steps"].source == "profile team"
    assert resolve(s)["LLM.temperature"].source == "profile team"
    command(s, "profile --clear")
    assert resolve(s)["max_steps"].source == "default"


@pytest.mark.unit
def test_the_policy_floor_is_the_source_it_raised(isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_APPROVAL", "never")
    s = new_session(isolated, rules={"approval": "four-eyes", "max_steps": 3})
    settings = resolve(s)
    assert settings["approval"].value == "four-eyes"
    policy_file = isolated / "admin" / "oi_kernel_policy.json"
    assert settings["approval"].source == f"the administrator's policy ({policy_file})"
    assert settings["max_steps"].source == f"the administrator's policy ({policy_file})"
    text = command(s, "config")
    assert f"- `approval`: `four-eyes` — the administrator's policy ({policy_file})" in text
    assert "**Administrator's policy:** approval at least `four-eyes`" in text


@pytest.mark.unit
def test_config_command_lists_values_with_sources_and_hides_secrets(isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_STEP_TIMEOUT", "300")
    cfg = Config()
    cfg.LLM.api_key = "sk-very-secret"
    s = new_session(isolated, cfg)
    text = command(s, "config")
    assert "- `step_timeout`: `300` — OI_STEP_TIMEOUT" in text
    assert "- `api_key`: (set) — c.LLM.api_key" in text
    assert "sk-very-secret" not in text
    assert "- `gateway_token`: (not set) — default" in text
    assert "- `max_tokens_per_session`: `0` — default" in text  # a limit, not a secret
    assert "**Engine**" in text and "**LLM**" in text and "**ChildKernel**" in text
    only = command(s, "config timeout")
    assert "step_timeout" in only and "max_steps" not in only
    assert "No setting matches `nothing_like_this`" in command(s, "config nothing_like_this")


# ------------------------------------------------------------- bad input names its source
@pytest.mark.unit
def test_a_bad_environment_value_names_the_variable_and_what_it_must_be(isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_MAX_STEPS", "ten")
    config.take_warnings()
    s = new_session(isolated)
    assert s.engine.max_steps == 10
    [warning] = [w for w in config.take_warnings() if "OI_MAX_STEPS" in w]
    assert "OI_MAX_STEPS='ten' is not a whole number; using 10." in warning
    assert resolve(s)["max_steps"].source == "default"


@pytest.mark.unit
def test_a_bad_config_value_names_the_setting_and_keeps_the_default(isolated):  # noqa: F811
    cfg = Config()
    cfg.Engine.max_steps = "ten"
    config.take_warnings()
    s = new_session(isolated, cfg)
    [warning] = [w for w in config.take_warnings() if "max_steps" in w]
    assert warning.startswith("Ignored c.Engine.max_steps = 'ten' from the configuration:")
    assert "Most LLM calls for one instruction" in warning  # the help says what it is
    assert s.engine.max_steps == 10


@pytest.mark.unit
def test_a_bad_config_value_over_the_environment_keeps_the_environment_and_its_source(
        isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_MAX_STEPS", "7")
    cfg = Config()
    cfg.Engine.max_steps = "ten"
    config.take_warnings()
    s = new_session(isolated, cfg)
    [warning] = [w for w in config.take_warnings() if "max_steps" in w]
    assert "Ignored c.Engine.max_steps = 'ten'" in warning and "Using 7." in warning
    assert (s.engine.max_steps, resolve(s)["max_steps"].source) == (7, "OI_MAX_STEPS")


@pytest.mark.unit
@pytest.mark.parametrize("name, raw, said", [
    ("OI_APPROVAL", "sometimes", "OI_APPROVAL='sometimes' is not one of always/risky/never/"),
    ("OI_STEP_TIMEOUT", "-3", "OI_STEP_TIMEOUT='-3' is not a number of at least 0; using 0."),
    ("OI_GUARD", "loud", "OI_GUARD='loud' is not one of risky/unasked/off; using 'risky'."),
    ("OI_AUTO_RUN", "maybe", "OI_AUTO_RUN='maybe' is not on/off (1/0, true/false, yes/no)"),
    ("OI_CONTEXT_BUDGET", "-1", "OI_CONTEXT_BUDGET='-1' is not at least 0; using 0."),
])
def test_the_environment_step_reports_a_bad_value_and_keeps_the_default(
        isolated, monkeypatch, name, raw, said):  # noqa: F811
    monkeypatch.setenv(name, raw)
    config.take_warnings()
    s = new_session(isolated)
    assert any(w.startswith(said) for w in config.take_warnings())
    trait = {"OI_AUTO_RUN": "approval"}.get(name) or next(
        t for t, v in s.engine.traits(config=True).items() if v.metadata.get("env") == name)
    assert resolve(s)[trait].source == "default"
    assert getattr(s.engine, trait) == s.engine.trait_defaults(trait)


@pytest.mark.unit
def test_engine_defaults_are_plain_and_the_environment_is_a_source(isolated, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OI_MAX_STEPS", "7")
    monkeypatch.setenv("OI_CHANGE_IGNORE", "*.tmp, scratch/")
    monkeypatch.setenv("OI_AUTO_RUN", "1")
    s = new_session(isolated)
    assert s.engine.trait_defaults("max_steps") == 10  # no @default reads the environment
    settings = resolve(s)
    assert (settings["max_steps"].value, settings["max_steps"].source) == (7, "OI_MAX_STEPS")
    assert settings["change_ignore"].value == ["*.tmp", "scratch/"]
    assert (settings["approval"].value, settings["approval"].source) == ("never", "OI_AUTO_RUN")


@pytest.mark.unit
def test_the_model_child_gateway_and_sandbox_settings_come_from_the_environment_step(
        isolated, monkeypatch):  # noqa: F811
    grant = isolated / "data"
    grant.mkdir()
    for name, value in {"OI_MODEL": "openai/x", "OI_API_BASE": "http://127.0.0.1:9/v1",
                        "OI_TOOL_MODE": "markdown", "OI_SMALL_MODEL": "OFF",
                        "OI_CHILD_KERNEL": "python3", "OI_CHILD_STARTUP_TIMEOUT": "9",
                        "OI_SANDBOX": "yes", "OI_MEMORY_LIMIT": " 2G ",
                        "OI_CHILD_GATEWAY_VALIDATE_CERT": "0",
                        "OI_CHILD_GATEWAY_CONNECT_TIMEOUT": "5",
                        "OI_SANDBOX_READ": f"{grant}{os.pathsep}"}.items():
        monkeypatch.setenv(name, value)
    cfg = Config()
    cfg.LLM.tool_mode = "tools"  # the config overrides the environment
    s = new_session(isolated, cfg)
    settings = resolve(s)
    for name, value, source in [
        ("model", "openai/x", "OI_MODEL"), ("api_base", "http://127.0.0.1:9/v1", "OI_API_BASE"),
        ("tool_mode", "tools", "c.LLM.tool_mode"), ("small_model", "off", "OI_SMALL_MODEL"),
        ("startup_timeout", 9.0, "OI_CHILD_STARTUP_TIMEOUT"), ("sandbox", True, "OI_SANDBOX"),
        ("memory_limit", "2G", "OI_MEMORY_LIMIT"),
        ("gateway_validate_cert", False, "OI_CHILD_GATEWAY_VALIDATE_CERT"),
        ("gateway_connect_timeout", 5.0, "OI_CHILD_GATEWAY_CONNECT_TIMEOUT"),
        ("gateway_request_timeout", 20.0, "default"), ("kernel_name", "python3", "OI_CHILD_KERNEL"),
        ("read_paths", [str(grant)], "OI_SANDBOX_READ"),
    ]:
        assert (settings[name].value, settings[name].source) == (value, source), name
    assert "- `memory_limit`: `2G` — OI_MEMORY_LIMIT" in command(s, "config memory")


@pytest.mark.unit
@pytest.mark.parametrize("name, raw, said", [
    ("OI_TOOL_MODE", "yaml", "OI_TOOL_MODE='yaml' is not one of auto/tools/markdown; using 'auto'."),
    ("OI_CHILD_STARTUP_TIMEOUT", "0", "OI_CHILD_STARTUP_TIMEOUT='0' is not a number of at least "
     "0.1; using 60.0."),
    ("OI_SANDBOX", "maybe", "OI_SANDBOX='maybe' is not on/off (1/0, true/false, yes/no); ignored."),
    ("OI_CHILD_GATEWAY_URL", "ftp://gw", "OI_CHILD_GATEWAY_URL='ftp://gw' is refused: 'ftp://gw' "
     "is not a gateway URL: it must start with http:// or https://"),
    ("OI_CHILD_GATEWAY_HEADERS", "{x", "OI_CHILD_GATEWAY_HEADERS='{x' is refused: not JSON"),
    ("OI_CHILD_GATEWAY_REQUEST_TIMEOUT", "soon", "OI_CHILD_GATEWAY_REQUEST_TIMEOUT='soon' is not "
     "a number; using 20.0."),
])
def test_a_bad_model_or_child_variable_names_itself_and_keeps_the_default(
        isolated, monkeypatch, name, raw, said):  # noqa: F811
    monkeypatch.setenv(name, raw)
    config.take_warnings()
    s = new_session(isolated)
    warnings = config.take_warnings()
    assert any(w.startswith(said) for w in warnings), warnings
    owner = s.engine.llm if name == "OI_TOOL_MODE" else s.child
    trait = next(t for t, v in owner.traits(config=True).items() if v.metadata.get("env") == name)
    assert getattr(owner, trait) == owner.trait_defaults(trait)
    assert resolve(s)[trait].source == "default"


@pytest.mark.unit
def test_the_kernel_magic_and_local_model_read_their_variables_in_the_same_step(monkeypatch):
    from oi_kernel.kernel.kernel import OIKernel
    from oi_kernel.llm.local import LocalModel
    from oi_kernel.magics.magics import OIMagics

    monkeypatch.setenv("OI_DISPLAY", "text")
    monkeypatch.setenv("OI_APPROVAL_UI", "sideways")
    monkeypatch.setenv("OI_LOCAL_MODEL_PATH", "/models/m.gguf")
    config.take_warnings()
    for cls in (OIKernel, OIMagics):
        obj = cls.__new__(cls)
        config.apply_environment(obj)
        assert (obj.display, obj.approval_ui) == ("text", "auto")
    assert any(w.startswith("OI_APPROVAL_UI='sideways' is not one of auto/widget/stdin")
               for w in config.take_warnings())
    local = LocalModel()
    assert (local.model_path, local.setting_sources["model_path"]) == (
        "/models/m.gguf", "OI_LOCAL_MODEL_PATH")
    cfg = Config()
    cfg.LocalModel.model_path = "/elsewhere.gguf"
    assert LocalModel(config=cfg).model_path == "/elsewhere.gguf"  # the config wins


@pytest.mark.unit
def test_a_bad_profile_value_names_the_file_and_the_choices(isolated):  # noqa: F811
    path = write_profile(isolated / "project" / ".oi" / "profiles", "bad", "approval: sometimes\n")
    s = new_session(isolated)
    with pytest.raises(ProfileError) as info:
        command(s, "profile bad")
    assert str(path) in str(info.value)
    assert "'approval' must be one of always, risky, never, four-eyes, four-eyes-all" in str(
        info.value)


@pytest.mark.unit
def test_a_bad_policy_value_names_the_file_and_line(isolated):  # noqa: F811
    s = new_session(isolated, rules={"comment": "x", "approval": "sometimes"})
    [problem] = s.policy.problems
    assert f"{isolated / 'admin' / 'oi_kernel_policy.json'}, line 3: 'approval' must be one of " \
        "always, risky, never, four-eyes, four-eyes-all; got 'sometimes'" == problem


@pytest.mark.unit
def test_a_bad_command_value_says_the_usage(isolated):  # noqa: F811
    s = new_session(isolated)
    with pytest.raises(OIError, match=r"Usage: approval always\|risky\|never\|four-eyes\|"):
        command(s, "approval sometimes")
    assert resolve(s)["approval"].source == "default"


# ------------------------------------------------------------- real kernels
@pytest.mark.kernel
def test_config_in_the_kernel_and_in_the_magic(_server, tmp_path):
    from tests.test_magics import start_kernel

    env = kernel_env(_server, tmp_path, OI_STEP_TIMEOUT="300", OI_MEMORY_LIMIT="3G",
                     OI_SMALL_MODEL="off")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        text = ks.execute("%config").text
        assert "- `step_timeout`: `300` — OI_STEP_TIMEOUT" in text
        assert "- `memory_limit`: `3G` — OI_MEMORY_LIMIT" in text
        assert "- `small_model`: `off` — OI_SMALL_MODEL" in text
        assert "- `model`: `openai/scripted` — OI_MODEL" in text
        ks.execute("%approval risky")
        assert "- `approval`: `risky` — %approval" in ks.execute("%config approval").text
    ks = start_kernel(_server, tmp_path)
    try:
        assert ks.execute("%oi approval four-eyes").status == "ok"
        text = ks.execute("%oi config approval").text
        assert "- `approval`: `four-eyes` — %oi approval" in text
    finally:
        ks.close()
