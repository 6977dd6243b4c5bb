"""Profiles: lookup, validation errors, precedence and provenance (units on a real Engine),
then real kernels: one started with OI_PROFILE and a config file, one from a profile
kernelspec installed by ``oi-kernel install --profile``, both talking to the scripted server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from traitlets.config import Config

from oi_kernel.core import prompts
from oi_kernel.core.engine import Engine
from oi_kernel.errors import OIError
from oi_kernel.llm.client import LLM
from oi_kernel.session import profile_state as PS
from oi_kernel.session import profiles as P
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A project directory as cwd, empty Jupyter config dirs, no OI_* settings."""
    for name in (
        "OI_PROFILE",
        "OI_MODEL",
        "OI_APPROVAL",
        "OI_AUTO_RUN",
        "OI_MAX_STEPS",
        "OI_CONTEXT_BUDGET",
        "OI_API_BASE",
        "OI_TOOL_MODE",
        "OI_SANDBOX",
    ):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "jupyter-config"
    config.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return tmp_path


def write_profile(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return path


def new_engine(config: Config | None = None) -> Engine:
    config = config or Config()
    return Engine(executor=object(), approver=object(), config=config, llm=LLM(config=config))


def sources(engine: Engine) -> dict[str, str]:
    return {key: source for key, _value, source in PS.provenance(engine)}


# ----------------------------------------------------------------------------- finding
def test_shipped_profiles_are_valid_and_listed():
    for name in ("data_analyst", "shell_helper", "local_small_model"):
        profile = P.load_profile(name)
        assert profile.path == P.BUILTIN_DIR / f"{name}.yaml"
        assert profile.description and profile.instructions
        assert "api_key" not in profile.settings
    assert {"data_analyst", "shell_helper", "local_small_model"} <= set(P.list_profiles())


def test_project_profile_is_found_walking_up_to_the_git_root(isolated, monkeypatch):
    repo = isolated / "project"
    (repo / ".git").mkdir()
    write_profile(repo / ".oi" / "profiles", "team", "model: openai/team-model\n")
    write_profile(isolated / ".oi" / "profiles", "outside", "model: x\n")  # above the git root
    deep = repo / "analysis" / "2024"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert P.load_profile("team").settings == {"model": "openai/team-model"}
    with pytest.raises(P.ProfileError) as info:
        P.load_profile("outside")
    searched = str(info.value)
    assert str(deep / ".oi" / "profiles" / "outside.yaml") in searched
    assert str(repo / ".oi" / "profiles" / "outside.yaml") in searched
    assert str(isolated / ".oi") not in searched  # the walk stopped at the git root


def test_project_beats_jupyter_config_beats_shipped(isolated):
    config = isolated / "jupyter-config" / "oi_profiles"
    write_profile(config, "data_analyst", "max_steps: 7\n")
    assert P.load_profile("data_analyst").settings == {"max_steps": 7}
    write_profile(isolated / "project" / ".oi" / "profiles", "data_analyst", "max_steps: 3\n")
    assert P.load_profile("data_analyst").settings == {"max_steps": 3}
    assert P.list_profiles()["data_analyst"].parent == isolated / "project" / ".oi" / "profiles"


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "modle: gpt-4o\n",
            ["unknown key 'modle'", "Did you mean 'model'?", "Known keys: api_base, approval,"],
        ),
        ("max_steps: ten\n", ["'max_steps' must be a whole number", "got a string ('ten')"]),
        ("temperature: hot\n", ["'temperature' must be a number", "got a string"]),
        ("sandbox: 1\n", ["'sandbox' must be true or false", "got a whole number (1)"]),
        ("languages: python\n", ["'languages' must be a list of language names"]),
        ("instructions: [a]\n", ["'instructions' must be a string", "got a list"]),
        ("model: gpt\ntemperature: 0.1\nmax_steps: 3: 4\n", ["invalid YAML at line 3, column 13"]),
        ("- model\n", ["must be a mapping of settings", "got a list"]),
        ("approval: sometimes\n", ["'approval' must be one of always, risky, never"]),
        ("max_steps: 0\n", ["'max_steps' must be at least 1"]),
        ("languages: [python, cobol]\n", ["unknown language 'cobol'"]),
        ("api_key: sk-abc\n", ["'api_key' is not allowed", "OI_API_KEY"]),
    ],
)
def test_bad_profile_errors_name_the_file_and_the_fix(isolated, text, expected):
    path = write_profile(isolated / "project" / ".oi" / "profiles", "bad", text)
    with pytest.raises(P.ProfileError) as info:
        P.load_profile("bad")
    message = str(info.value)
    assert message.startswith(f"Profile 'bad' ({path})")
    for part in expected:
        assert part in message


def test_missing_profile_lists_every_place_searched_and_what_exists(isolated):
    with pytest.raises(P.ProfileError) as info:
        P.load_profile("nope")
    message = str(info.value)
    for place in P.search_paths("nope"):
        assert f"  - {place}\n" in message
    assert str(isolated / "jupyter-config" / "oi_profiles" / "nope.yaml") in message
    assert "Available profiles: data_analyst, local_small_model, shell_helper." in message


def test_profiles_are_never_fetched_from_a_url(isolated):
    with pytest.raises(P.ProfileError, match="only from local files"):
        P.load_profile("https://example.com/p.yaml")


def test_yaml_is_read_safely(isolated):
    write_profile(
        isolated / "project" / ".oi" / "profiles",
        "evil",
        "model: !!python/object/apply:os.system ['echo hi']\n",
    )
    with pytest.raises(P.ProfileError, match="invalid YAML"):
        P.load_profile("evil")


# ----------------------------------------------------------------------------- precedence
def test_precedence_default_env_config_profile_magic(isolated, monkeypatch):
    monkeypatch.setenv("OI_MODEL", "openai/from-env")
    monkeypatch.setenv("OI_MAX_STEPS", "6")
    config = Config()
    config.Engine.max_steps = 4  # config beats env
    config.LLM.temperature = 0.7
    engine = new_engine(config)
    assert (engine.llm.model, engine.max_steps, engine.llm.temperature) == (
        "openai/from-env",
        4,
        0.7,
    )
    got = sources(engine)
    assert got["model"] == "env OI_MODEL"
    assert got["max_steps"] == got["temperature"] == "config"
    assert got["context_budget"] == "default"

    write_profile(
        isolated / "project" / ".oi" / "profiles",
        "p",
        "model: openai/from-profile\ntemperature: 0.2\ncontext_budget: 5000\n",
    )
    applied = PS.apply(engine, P.load_profile("p"))
    assert {c.key for c in applied.changes} == {"model", "temperature", "context_budget"}
    assert (engine.llm.model, engine.llm.temperature, engine.max_steps) == (
        "openai/from-profile",
        0.2,
        4,
    )  # profile beats env and config
    got = sources(engine)
    assert got["model"] == got["temperature"] == got["context_budget"] == "profile p"
    assert got["max_steps"] == "config"

    engine.llm.model = "openai/from-magic"  # what %model does: a later magic wins
    assert sources(engine)["model"] == "magic"

    PS.apply(engine, None)  # clear: profile values go back, the magic's stays
    assert engine.llm.model == "openai/from-magic"
    assert (engine.llm.temperature, engine.context_budget) == (0.7, 0)
    got = sources(engine)
    assert got["temperature"] == "config" and got["context_budget"] == "default"


def test_switching_profiles_reverts_what_only_the_old_one_set(isolated):
    profiles = isolated / "project" / ".oi" / "profiles"
    write_profile(profiles, "a", "approval: never\nmax_steps: 3\n")
    write_profile(profiles, "b", "max_steps: 5\n")
    engine = new_engine()
    PS.apply(engine, P.load_profile("a"))
    assert (engine.approval, engine.max_steps) == ("never", 3)
    PS.apply(engine, P.load_profile("b"))
    assert (engine.approval, engine.max_steps) == ("always", 5)
    assert sources(engine)["approval"] == "default"


def test_instructions_compose_config_profile_and_session(isolated):
    config = Config()
    config.Engine.custom_instructions = "From config."
    engine = new_engine(config)
    write_profile(isolated / "project" / ".oi" / "profiles", "p", "instructions: From profile.\n")
    PS.apply(engine, P.load_profile("p"))
    PS.instructions_command(engine, "From the session.")
    assert engine.custom_instructions == "From config.\n\nFrom profile.\n\nFrom the session."
    parts = PS.instruction_parts(engine)
    assert [src for src, _ in parts] == ["config", "profile p", "%instructions"]
    shown = PS.instructions_command(engine, "")
    assert "**profile p:**" in shown and "From the session." in shown
    assert "profile p" in PS.instructions_command(engine, "--clear")  # still in effect
    assert engine.custom_instructions == "From config.\n\nFrom profile."
    PS.apply(engine, None)
    assert engine.custom_instructions == "From config."


def test_languages_and_system_message_reach_the_prompt(isolated):
    engine = new_engine()
    assert "shell" in engine.offered_languages()  # bash is installed here
    write_profile(
        isolated / "project" / ".oi" / "profiles",
        "p",
        "languages: [py]\nsystem_message: You only answer in French.\n",
    )
    text = PS.profile_command(engine, "p")
    assert "replaces the built-in system prompt" in text
    assert engine.offered_languages() == ["python"]
    assert prompts.execute_tool(engine.offered_languages())["function"]["parameters"]["properties"][
        "language"
    ]["enum"] == ["python"]
    system = prompts.system_prompt(
        use_tools=True, languages=["python"], cwd="/", base=engine.system_message, extra="Be brief."
    )
    assert system == "You only answer in French.\n\nAdditional instructions:\nBe brief."


def test_sandbox_without_a_child_is_reported_not_ignored_silently(isolated):
    engine = new_engine()
    write_profile(isolated / "project" / ".oi" / "profiles", "p", "sandbox: true\n")
    applied = PS.apply(engine, P.load_profile("p"))
    assert any("`sandbox` is ignored here" in note for note in applied.notes)


def test_a_startup_profile_that_fails_blocks_instructions_until_fixed(isolated, monkeypatch):
    monkeypatch.setenv("OI_PROFILE", "missing")
    engine = new_engine()
    assert PS.apply_startup(engine) == "missing"
    with pytest.raises(P.ProfileError) as info:
        engine.check_ready()
    assert "chosen by OI_PROFILE" in str(info.value)
    assert "No profile named 'missing'" in str(info.value)
    assert "%profile --clear" in str(info.value)
    assert "⚠️" in PS.describe(engine)
    PS.profile_command(engine, "--clear")
    engine.check_ready()  # no longer raises


def test_config_selects_a_profile_and_env_wins(isolated, monkeypatch):
    config = Config()
    config.Profile.name = "data_analyst"
    engine = new_engine(config)
    assert PS.apply_startup(engine) == "data_analyst"
    assert engine.max_steps == 15 and "chosen by c.Profile.name" in PS.describe(engine)
    monkeypatch.setenv("OI_PROFILE", "shell_helper")
    engine = new_engine(config)
    assert PS.apply_startup(engine) == "shell_helper"
    assert engine.max_steps == 8
    assert PS.active_profile(engine).name == "shell_helper"
    assert PS.active_profile(new_engine()) is None


# ----------------------------------------------------------------------------- kernels
def profile_env(server: S.ScriptedLLMServer, tmp: Path, **extra: str) -> dict[str, str]:
    return oi_env(server, tmp, **{"OI_AUTO_RUN": "1", "OI_PROFILE": "", **extra})


def system_prompt_of(body: dict) -> str:
    assert body["messages"][0]["role"] == "system"
    return body["messages"][0]["content"]


def language_enum(body: dict) -> list[str]:
    return body["tools"][0]["function"]["parameters"]["properties"]["language"]["enum"]


def test_kernel_applies_profile_with_documented_precedence(llm_server, tmp_path):
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "oi_kernel_config.py").write_text(
        "c.LLM.temperature = 0.7\nc.Engine.max_steps = 4\n"
    )
    write_profile(
        tmp_path / ".oi" / "profiles",
        "proj",
        "model: openai/from-profile\ntemperature: 0.25\n"
        "instructions: PROFILE-MARKER-5521 answer tersely.\n",
    )
    env = oi_env(
        llm_server,
        tmp_path,
        OI_PROFILE="proj",
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_CONFIG_PATH=str(config_dir),
    )
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("say hi").status == "ok"
        body = llm_server.requests[-1]
        assert body["model"] == "from-profile"  # profile beats OI_MODEL
        assert body["temperature"] == 0.25  # profile beats the config file
        assert "PROFILE-MARKER-5521" in system_prompt_of(body)

        shown = ks.execute("%profile").text
        assert "Profile **proj**" in shown and "chosen by OI_PROFILE" in shown
        assert "| `model` | `openai/from-profile` | profile proj |" in shown
        assert "| `max_steps` | 4 | config |" in shown
        assert "| `api_base` |" in shown and "| env OI_API_BASE |" in shown
        assert "| `context_budget` | 0 | default |" in shown

        ks.execute("%model openai/from-magic")
        assert ks.execute("%instructions SESSION-MARKER-8812").status == "ok"
        ks.execute("say hi again")
        body = llm_server.requests[-1]
        assert body["model"] == "from-magic"  # a later magic beats the profile
        system = system_prompt_of(body)
        assert system.index("PROFILE-MARKER-5521") < system.index("SESSION-MARKER-8812")
        assert "| `model` | `openai/from-magic` | magic |" in ks.execute("%profile").text

        cleared = ks.execute("%profile --clear").text
        assert "`temperature`: 0.25 → 0.7" in cleared
        assert ks.execute("%profile data_analyst").status == "ok"
        ks.execute("one more")
        body = llm_server.requests[-1]
        assert body["temperature"] == 0.1 and body["model"] == "from-magic"
        assert language_enum(body) == ["python"]
        assert "You are helping with data analysis." in system_prompt_of(body)
        assert "PROFILE-MARKER-5521" not in system_prompt_of(body)

        bad = ks.execute("%profile no_such_profile")
        assert bad.status == "error" and "No profile named 'no_such_profile'" in bad.text


def test_profile_kernelspec_starts_with_its_profile(llm_server, tmp_path, monkeypatch):
    prefix, config_dir = tmp_path / "prefix", tmp_path / "config"
    write_profile(
        config_dir / "oi_profiles",
        "team_rules",
        "description: Team rules.\nmodel: openai/team-model\nmax_steps: 2\n"
        "instructions: KERNELSPEC-MARKER-3307 cite sources.\n",
    )
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config_dir))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oi_kernel.cli",
            "install",
            "--profile",
            "team_rules",
            "--prefix",
            str(prefix),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    spec_dir = prefix / "share" / "jupyter" / "kernels" / "open-interpreter-team_rules"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["display_name"] == "Open Interpreter (team_rules)"
    assert spec["env"] == {"OI_PROFILE": "team_rules"}

    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    env = profile_env(llm_server, tmp_path, JUPYTER_CONFIG_PATH=str(config_dir))
    del env["OI_PROFILE"]  # the kernelspec sets it
    with KernelSession("open-interpreter-team_rules", env=env, cwd=str(tmp_path)) as ks:
        llm_server.set_fallback(S.tool_call("print('again')"))
        result = ks.execute("loop")
        assert result.status == "ok"
        assert len(llm_server.requests) == 2  # the profile's max_steps
        body = llm_server.requests[0]
        assert body["model"] == "team-model"
        assert "KERNELSPEC-MARKER-3307 cite sources." in system_prompt_of(body)


def test_install_with_an_unknown_profile_fails_before_installing(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oi_kernel.cli",
            "install",
            "--profile",
            "nope",
            "--prefix",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "No profile named 'nope'" in done.stderr
    assert not (tmp_path / "share").exists()


def test_profile_error_is_an_oi_error():
    assert issubclass(P.ProfileError, OIError)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")
def test_profile_sandbox_restarts_the_child_confined(llm_server, tmp_path):
    from oi_kernel.execution.sandbox import unavailable

    if unavailable():
        pytest.skip(f"no sandbox here: {unavailable()}")
    data = Path(tempfile.mkdtemp(prefix="oi-granted-", dir="/var/tmp"))  # outside the view
    (data / "table.csv").write_text("a,b\n1,2\n")
    write_profile(tmp_path / ".oi" / "profiles", "boxed",
                  f"sandbox: true\nsandbox_read_paths: [{data}]\n")
    with KernelSession(env=profile_env(llm_server, tmp_path), cwd=str(tmp_path)) as ks:
        assert ks.execute("%%python\nbefore = 1").status == "ok"
        applied = ks.execute("%profile boxed")
        assert applied.status == "ok", applied.text
        assert "restarted for the sandbox" in applied.text
        interfaces = "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))"
        assert ks.execute(f"%%python\n{interfaces}").stdout == "['lo']\n"  # no network
        assert ks.execute("%%python\nprint('before' in dir())").stdout == "False\n"
        shown = ks.execute("%profile").text
        assert "| `sandbox` | on | profile boxed |" in shown
        assert f"| `sandbox_read_paths` | {data} | profile boxed |" in shown
        read = ks.execute(f"%%python\nprint(open({str(data / 'table.csv')!r}).read())")
        assert read.stdout == "a,b\n1,2\n\n"  # granted by the profile
        cleared = ks.execute("%profile --clear")
        assert "`sandbox`: on → off" in cleared.text and "restarted" in cleared.text
        assert f"`sandbox_read_paths`: {data} → (none)" in cleared.text
    shutil.rmtree(data, ignore_errors=True)
