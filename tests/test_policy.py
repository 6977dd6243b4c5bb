"""The administrator's policy: reading and merging ``oi_kernel_policy.json``, the strictest
mode on a bad line, and each rule held against every way a user could lower it (the
environment, ``oi_kernel_config.py``, a profile, a magic, an API keyword or attribute).
In-process sessions from ``build_session`` (the one assembly every front door uses) for
the table; real kernels at the end for the Open Interpreter kernel and ``%%oi``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Configurable
from traitlets.config.loader import PyFileConfigLoader

from oi_kernel.approval.approvers import RefuseApprover
from oi_kernel.core.types import ApprovalRequest, CodeBlock
from oi_kernel.errors import PolicyError
from oi_kernel.session import commands
from oi_kernel.session.assembly import build_session
from oi_kernel.session.frontend_comm import FrontendComms
from oi_kernel.session.policy import FILE_NAME, load_policy, policy_dirs
from oi_kernel.session.status import status_fields, status_markdown
from tests import llm_server as S
from tests.env import TEST_KEY, oi_env
from tests.kernel_client import KernelSession

RULES = {
    "approval": "risky",
    "allowed_models": ["openai/scripted*", "gpt-4o*"],
    "sandbox": "required",
    "max_cost_per_session": 2,
    "max_tokens_per_session": 5000,
    "max_steps": 4,
    "mcp": {"allowed": ["github", "fs-*"], "denied": ["fs-root"]},
}
USER_SETTINGS = ("OI_MODEL", "OI_APPROVAL", "OI_AUTO_RUN", "OI_MAX_STEPS", "OI_SANDBOX",
                 "OI_MAX_SESSION_COST", "OI_MAX_SESSION_TOKENS", "OI_LOG_DIR", "OI_PROFILE",
                 "OI_CHILD_GATEWAY_URL", "OI_CHILD_GATEWAY_TOKEN")


def write_policy(directory: Path, rules: dict[str, Any] | str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    path.write_text(rules if isinstance(rules, str) else json.dumps(rules, indent=2))
    return path


@pytest.fixture
def admin(tmp_path, monkeypatch):
    """A clean user environment and an administrator's directory with the policy RULES (plus
    a log_dir) on JUPYTER_CONFIG_PATH; cwd is an empty project."""
    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OI_MODEL", "openai/scripted")  # allowed
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user-config"))
    admin_dir = tmp_path / "admin"
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin_dir))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    path = write_policy(admin_dir, {**RULES, "log_dir": str(tmp_path / "audit")})
    return path


def session(kind: str = "api", config: str = "", **kw: Any) -> Any:
    """A session as a front door builds it, with ``config`` as oi_kernel_config.py."""
    parent = None
    if config:
        path = Path("oi_kernel_config.py")
        path.write_text(config)
        parent = Configurable(config=PyFileConfigLoader(path.name, path=str(Path.cwd())).load_config())
    return build_session(kind, approver=RefuseApprover(), parent=parent, **kw)


def command(s: Any, line: str) -> str:
    said: list[str] = []
    asyncio.run(commands.run_command(commands.CommandContext(s, said.append, lambda: None), line))
    return "\n".join(said)


def refused(action: Any, policy_path: Path) -> str:
    with pytest.raises(PolicyError) as caught:
        action()
    text = str(caught.value)
    assert "administrator's policy" in text and str(policy_path) in text, text
    return text


def notices(s: Any) -> str:
    return s.config_problems()


def profile(name: str, text: str) -> None:
    directory = Path(".oi/profiles")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.yaml").write_text(text)


def turn(s: Any) -> None:
    asyncio.run(s.engine.run_turn("hello", lambda event: None))


# ----------------------------------------------------------------------------- reading
def test_policy_dirs_are_the_administrators_not_the_users(tmp_path, monkeypatch):
    user = tmp_path / "user"
    extra = tmp_path / "extra"
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", os.pathsep.join([str(extra), str(user)]))
    monkeypatch.setenv("JUPYTER_NO_CONFIG", "1")  # does not switch a policy off
    dirs = policy_dirs()
    assert dirs[0] == extra.resolve()
    assert user.resolve() not in dirs
    assert Path("/etc/jupyter") in dirs
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", "/etc/jupyter")  # claiming the system's as one's own
    assert Path("/etc/jupyter") in policy_dirs()


def test_files_merge_and_the_stricter_value_wins(tmp_path):
    a = write_policy(tmp_path / "a", {"approval": "risky", "max_steps": 8,
                                      "allowed_models": ["gpt-4o*", "claude*"],
                                      "mcp": {"allowed": ["github", "fs"]}})
    b = write_policy(tmp_path / "b", {"approval": "always", "max_steps": 12, "sandbox": "required",
                                      "allowed_models": ["gpt-4o-mini"],
                                      "mcp": {"allowed": ["github"], "denied": ["git*"]}})
    policy = load_policy([tmp_path / "a", tmp_path / "b"])
    assert not policy.strict and policy.files == [a, b]
    assert (policy.approval, policy.max_steps, policy.sandbox) == ("always", 8, True)
    assert policy.sources["approval"] == b and policy.sources["max_steps"] == a
    assert policy.model_allowed("gpt-4o-mini") and not policy.model_allowed("gpt-4o")
    assert not policy.model_allowed("claude-3")
    assert not policy.mcp_server_allowed("github")  # allowed by both, denied by b
    assert not policy.mcp_server_allowed("fs") and not policy.mcp_server_allowed("other")


@pytest.mark.parametrize("text, line, words", [
    ('{\n  "approval": "risky",\n  "aproval": "always"\n}', 3, "unknown key 'aproval' (did you mean 'approval'?)"),
    ('{\n  "max_steps": "ten"\n}', 2, "'max_steps' must be a whole number above 0"),
    ('{\n  "approval": "sometimes"\n}', 2, "'approval' must be one of always, risky, never"),
    ('{\n  "sandbox": "yes please"\n}', 2, "'sandbox' must be \"required\""),
    ('{\n  "sandbox_grants": "some"\n}', 2, "'sandbox_grants' must be \"denied\""),
    ('{\n  "log_dir": "logs"\n}', 2, "'log_dir' must be an absolute path"),
    ('{\n  "gateway_url": "gateway:8888"\n}', 2, "must start with http:// or https://"),
    ('{\n  "mcp": {"allow": ["x"]}\n}', 2, "'mcp' must be an object"),
    ('{\n  "max_steps": 3,\n  "approval": "risky"\n  "sandbox": "required"\n}', 4, "not valid JSON"),
    ('["approval"]', 1, "must be a JSON object"),
])
def test_a_bad_line_is_named_and_the_strictest_mode_applies(tmp_path, text, line, words):
    path = write_policy(tmp_path, text)
    policy = load_policy([tmp_path])
    assert policy.strict
    assert f"{path}, line {line}:" in policy.problems[0] and words in policy.problems[0]
    assert (policy.approval, policy.sandbox, policy.max_steps) == ("always", True, 1)
    assert not policy.sandbox_grants
    assert not policy.model_allowed("gpt-4o") and not policy.mcp_server_allowed("github")
    assert "strictest mode" in policy.strict_message()


def test_conflicting_forced_values_are_a_problem(tmp_path):
    write_policy(tmp_path / "a", {"gateway_url": "http://a:8888"})
    write_policy(tmp_path / "b", {"gateway_url": "http://b:8888"})
    policy = load_policy([tmp_path / "a", tmp_path / "b"])
    assert policy.strict and "must agree" in policy.problems[0]
    assert policy.gateway_url == "http://b:8888"  # the more system-wide file's


def test_no_policy_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OI_AUTO_RUN", "1")
    s = build_session("api", approver=RefuseApprover(), engine_options={"approval": "never"},
                      policy=load_policy([tmp_path]))
    assert s.engine.approval == "never" and not s.policy.active
    s.engine.max_steps = 50
    assert "| policy | none |" in status_markdown(s)


# ----------------------------------------------------------------------------- approval
@pytest.mark.parametrize("env", [{"OI_AUTO_RUN": "1"}, {"OI_APPROVAL": "never"}])
def test_approval_from_the_environment_is_raised_to_the_floor(admin, monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s = session("api")
    assert s.engine.approval == "risky"
    shown = notices(s)
    assert next(iter(env)) in shown and str(admin) in shown


def test_approval_from_the_config_file_is_raised_to_the_floor(admin):
    s = session("api", config='c.Engine.approval = "never"\n')
    assert s.engine.approval == "risky"
    assert "c.Engine.approval" in notices(s)


def test_approval_from_a_profile_magic_or_api_is_refused(admin):
    profile("yolo", "approval: never\n")
    s = session("api")
    text = command(s, "profile yolo")
    assert "was not applied" in text and str(admin) in text
    assert s.engine.approval == "always"
    refused(lambda: command(s, "auto_run on"), admin)
    refused(lambda: command(s, "approval never"), admin)
    refused(lambda: setattr(s.engine, "approval", "never"), admin)
    command(s, "approval risky")  # at the floor is fine
    assert s.engine.approval == "risky"
    from oi_kernel import Interpreter

    refused(lambda: Interpreter(auto_run=True), admin)


def test_run_all_does_not_go_below_the_floor(admin):
    s = session()
    engine = s.engine
    flagged = ApprovalRequest(1, 1, CodeBlock("python", "import shutil"), flags=["flag"])
    plain = ApprovalRequest(1, 2, CodeBlock("python", "1 + 1"))
    engine.approval = "risky"
    assert engine.steps.needs_approval(flagged, run_all=True)  # "Run all" still asks about risky code
    assert not engine.steps.needs_approval(plain, run_all=True)
    engine.approval_floor = "always"
    assert engine.steps.needs_approval(plain, run_all=True)


# ----------------------------------------------------------------------------- models
@pytest.mark.parametrize("how", ["env", "config", "api"])
def test_a_model_outside_the_list_never_gets_a_request(admin, monkeypatch, llm_server, how):
    if how == "env":
        monkeypatch.setenv("OI_MODEL", "claude-3-opus")
        s = session()
    elif how == "config":
        s = session(config='c.LLM.model = "claude-3-opus"\n')
    else:
        from oi_kernel.llm.client import LLM

        s = session(llm=LLM(model="claude-3-opus", api_base=llm_server.url, api_key=TEST_KEY))
    text = refused(lambda: turn(s), admin)
    assert "claude-3-opus" in text and "`gpt-4o*`" in text
    assert llm_server.requests == []


def test_a_model_outside_the_list_is_refused_by_magic_profile_and_comm(admin):
    s = session("api")
    refused(lambda: command(s, "model claude-3-opus"), admin)
    refused(lambda: setattr(s.llm, "model", "claude-3-opus"), admin)
    command(s, "model gpt-4o-mini")
    assert s.llm.model == "gpt-4o-mini"
    profile("other", "model: claude-3-opus\n")
    assert "was not applied" in command(s, "profile other")
    sent: list[dict[str, Any]] = []

    class Comm:
        comm_id = "c1"

        def send(self, data: dict[str, Any]) -> None:
            sent.append(data)

    comms = FrontendComms(s.engine, lambda: None, details=lambda: status_fields(s), child=s.child)
    comms._set_model(Comm(), {"model": "claude-3-opus"})
    assert str(admin) in sent[-1]["error"] and sent[-1]["model"] == "gpt-4o-mini"


# ----------------------------------------------------------------------------- sandbox
@pytest.mark.parametrize("how", ["env", "config"])
def test_the_sandbox_cannot_be_turned_off_before_start(admin, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("OI_SANDBOX", "0")
        s = session()
        assert "OI_SANDBOX" in notices(s)
    else:
        s = session(config="c.ChildKernel.sandbox = False\n")
        assert "c.ChildKernel.sandbox" in notices(s)
    assert s.child.sandbox and status_fields(s)["child"] == "sandbox"


def test_the_sandbox_cannot_be_turned_off_later(admin):
    s = session("api")
    assert s.child.sandbox
    refused(lambda: command(s, "sandbox off"), admin)
    refused(lambda: setattr(s.child, "sandbox", False), admin)
    profile("loose", "sandbox: false\n")
    assert "was not applied" in command(s, "profile loose")
    assert s.child.sandbox
    refused(lambda: build_session("api", approver=RefuseApprover(),
                                  child_options={"sandbox": False}), admin)


@pytest.mark.parametrize("how", ["env", "config"])
def test_sandbox_grants_are_dropped_when_the_policy_denies_them(admin, monkeypatch, tmp_path, how):
    write_policy(admin.parent, {**RULES, "sandbox_grants": "denied"})
    data = tmp_path / "data"
    data.mkdir()
    if how == "env":
        monkeypatch.setenv("OI_SANDBOX_READ", str(data))
        s = session()
        said, origin = notices(s), "OI_SANDBOX_READ"
    else:
        s = session(config=f"c.Sandbox.write_paths = [{str(data)!r}]\n")
        said, origin = notices(s), "c.Sandbox.write_paths"
    assert origin in said and "Sandbox grants are not allowed" in said, said
    assert (s.child.grants.read_paths, s.child.grants.write_paths) == ([], [])
    assert "no sandbox grants" in " ".join(s.policy.rules())


def test_sandbox_grants_cannot_be_added_later_when_the_policy_denies_them(admin, tmp_path):
    write_policy(admin.parent, {**RULES, "sandbox_grants": "denied"})
    data = tmp_path / "data"
    data.mkdir()
    s = session("api")
    text = refused(lambda: command(s, f"sandbox allow {data}"), admin)
    assert "Sandbox grants are not allowed" in text
    refused(lambda: setattr(s.child.grants, "write_paths", [str(data)]), admin)
    profile("wide", f"sandbox_read_paths: [{data}]\n")
    assert "was not applied" in command(s, "profile wide")
    assert s.child.grants.read_paths == []


def test_sandbox_grants_stay_allowed_without_the_rule(admin, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    s = session("api")
    assert "Granted" in command(s, f"sandbox allow {data}")
    assert s.child.grants.read_paths == [str(data)]


def test_a_users_own_gateway_is_not_used_when_the_sandbox_is_required(admin, monkeypatch):
    monkeypatch.setenv("OI_CHILD_GATEWAY_URL", "http://127.0.0.1:9")
    s = session()
    assert not s.child.gateway_url and s.child.sandbox
    assert "is not used" in notices(s)


def test_magic_sessions_refuse_turns_when_the_sandbox_is_required(admin):
    s = build_session("magic", approver=RefuseApprover(), executor=_Shell())
    text = refused(lambda: turn(s), admin)
    assert "cannot be sandboxed" in text


class _Shell:
    sandboxed = False
    cwd = "."

    async def namespace_summary(self) -> str:
        return ""


# ----------------------------------------------------------------------------- limits
@pytest.mark.parametrize("key, env, over, limit", [
    ("max_steps", "OI_MAX_STEPS", 9, 4),
    ("max_cost_per_session", "OI_MAX_SESSION_COST", 10, 2),
    ("max_tokens_per_session", "OI_MAX_SESSION_TOKENS", 90000, 5000),
])
def test_limits_cannot_be_raised_or_turned_off(admin, monkeypatch, key, env, over, limit):
    monkeypatch.setenv(env, str(over))
    s = session("api")
    assert getattr(s.engine, key) == limit and env in notices(s)
    s2 = session("api", config=f"c.Engine.{key} = {over}\n")
    assert getattr(s2.engine, key) == limit and f"c.Engine.{key}" in notices(s2)
    line = f"max_steps {over}" if key == "max_steps" else f"limits {key}={over}"
    refused(lambda: command(s, line), admin)
    if key != "max_steps":
        refused(lambda: command(s, f"limits {key}=0"), admin)  # 0 would mean "no cap"
    refused(lambda: setattr(s.engine, key, over), admin)
    profile(f"big-{key}", f"{key}: {over}\n")
    assert "was not applied" in command(s, f"profile big-{key}")
    setattr(s.engine, key, limit // 2 or 1)  # lower is fine
    if key == "max_steps":
        from oi_kernel import Interpreter

        refused(lambda: Interpreter(max_steps=over), admin)


def test_a_session_cap_stops_with_the_policys_message(admin, llm_server, tmp_path):
    from oi_kernel import Interpreter

    write_policy(admin.parent, {"max_tokens_per_session": 10})
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key=TEST_KEY) as it:
        llm_server.enqueue(S.text("hello there"))
        list(it.chat("first"))
        chunks = list(it.chat("second"))
    text = " ".join(str(getattr(c, "text", "")) for c in chunks)
    assert "set by the administrator's policy" in text and str(admin) in text
    assert len(llm_server.requests) == 1


# ----------------------------------------------------------------------------- logs, mcp, gateway
def test_logs_go_to_the_policys_directory_and_cannot_be_turned_off(admin, monkeypatch, tmp_path):
    monkeypatch.setenv("OI_LOG_DIR", str(tmp_path / "mine"))
    s = session()
    assert s.log_dir == str(tmp_path / "audit") and "not to OI_LOG_DIR" in notices(s)
    assert Path(s.open_log().path).parent == tmp_path / "audit"
    from oi_kernel import Interpreter

    refused(lambda: Interpreter(log=False), admin)


def test_an_unwritable_log_dir_blocks_turns(tmp_path, monkeypatch):
    monkeypatch.setenv("OI_MODEL", "openai/scripted")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    policy_dir = tmp_path / "admin"
    path = write_policy(policy_dir, {"log_dir": str(blocker / "logs")})
    s = build_session("api", approver=RefuseApprover(), policy=load_policy([policy_dir]))
    text = refused(lambda: turn(s), path)
    assert "cannot be written" in text


def test_mcp_servers_outside_the_policy_are_never_started(admin, monkeypatch, tmp_path):
    from oi_kernel.session.tools import describe_mcp, mcp_provider

    servers = {name: {"command": "python3", "args": ["-c", "pass"]}
               for name in ("fs-data", "fs-root", "shell")}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    s = session()
    said = notices(s)
    assert "'fs-root', 'shell' not started" in said and str(admin) in said, said
    assert [spec.name for spec in mcp_provider(s).servers] == ["fs-data"]
    shown = describe_mcp(s)
    assert "Not started: **fs-root**, **shell**" in shown and "fs-data" in shown


def test_no_mcp_server_in_the_strictest_mode(tmp_path, monkeypatch):
    from oi_kernel.session.tools import describe_mcp, mcp_provider

    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "admin"))
    write_policy(tmp_path / "admin", '{"mcp": "all of them"}')
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"github": {"command": "python3"}}}))
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    monkeypatch.chdir(tmp_path)
    s = session()
    assert mcp_provider(s) is None
    assert "strictest mode: no MCP server" in describe_mcp(s)


def test_mcp_rules_are_kept_and_shown(admin):
    s = session()
    assert s.policy.mcp_server_allowed("github") and s.policy.mcp_server_allowed("fs-home")
    assert not s.policy.mcp_server_allowed("fs-root") and not s.policy.mcp_server_allowed("x")
    assert "MCP servers allowed github, fs-*; denied fs-root" in status_markdown(s)


def test_a_forced_gateway_wins_and_cannot_be_changed(tmp_path, monkeypatch):
    path = write_policy(tmp_path / "admin", {"gateway_url": "http://gw.example:8888/",
                                             "sandbox": "required"})
    monkeypatch.setenv("OI_CHILD_GATEWAY_URL", "http://mine.example:1")
    monkeypatch.delenv("OI_SANDBOX", raising=False)
    policy = load_policy([tmp_path / "admin"])
    s = build_session("api", approver=RefuseApprover(), policy=policy)
    assert s.child.gateway_url == "http://gw.example:8888"
    assert not s.child.sandbox  # confinement is the administrator's gateway's job
    assert "not on http://mine.example:1" in s.config_problems()
    refused(lambda: setattr(s.child, "gateway_url", "http://mine.example:1"), path)
    config = 'c.ChildKernel.gateway_url = "http://mine.example:1"\n'
    cfg_path = tmp_path / "oi_kernel_config.py"
    cfg_path.write_text(config)
    parent = Configurable(config=PyFileConfigLoader(cfg_path.name, path=str(tmp_path)).load_config())
    s2 = build_session("api", approver=RefuseApprover(), parent=parent, policy=policy)
    assert s2.child.gateway_url == "http://gw.example:8888"
    assert status_fields(s2)["child"] == "gateway"


def test_strictest_mode_refuses_turns_and_names_the_line(tmp_path, monkeypatch, llm_server):
    path = write_policy(tmp_path, '{\n  "approval": "risky",\n  "max_step": 3\n}')
    monkeypatch.setenv("OI_MODEL", "openai/scripted")
    monkeypatch.delenv("OI_SANDBOX", raising=False)
    s = build_session("api", approver=RefuseApprover(), policy=load_policy([tmp_path]))
    shown = s.config_problems()
    assert f"{path}, line 3: unknown key 'max_step'" in shown and "strictest mode" in shown
    assert (s.engine.approval, s.engine.max_steps, s.child.sandbox) == ("always", 1, True)
    text = refused(lambda: turn(s), path)
    assert "line 3" in text
    assert "strictest mode" in status_markdown(s)
    assert llm_server.requests == []


# ----------------------------------------------------------------------------- real kernels
@pytest.fixture(scope="module")
def policed(_server, tmp_path_factory):
    """The Open Interpreter kernel under a policy, with a user who tries to lower it from
    the environment and a start-up profile."""
    tmp = tmp_path_factory.mktemp("policed")
    admin_dir = tmp / "admin"
    path = write_policy(admin_dir, {"approval": "risky", "allowed_models": ["openai/scripted"],
                                    "max_steps": 3, "log_dir": str(tmp / "audit")})
    (tmp / ".oi" / "profiles").mkdir(parents=True)
    (tmp / ".oi" / "profiles" / "yolo.yaml").write_text("approval: never\nmax_steps: 20\n")
    env = oi_env(_server, tmp, OI_AUTO_RUN="1", OI_MAX_STEPS="9", OI_PROFILE="yolo",
                 JUPYTER_CONFIG_PATH=str(admin_dir), JUPYTER_CONFIG_DIR=str(tmp / "user"))
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp, ks.policy_path = tmp, path
        yield ks


def test_the_kernel_says_what_the_policy_changed_and_refuses_magics(policed, _server):
    first = policed.execute("%status")
    text = first.text
    path = str(policed.policy_path)
    assert "OI_AUTO_RUN" in first.stderr and "OI_MAX_STEPS" in first.stderr
    assert "Profile 'yolo'" in first.stderr and "was not applied" in first.stderr
    assert "**in force**" in text and path in text and "approval at least `risky`" in text
    for line in ("%auto_run on", "%max_steps 10", "%model gpt-4o"):
        result = policed.execute(line)
        assert result.status == "error" and path in result.text, (line, result.text)


def test_the_kernel_runs_turns_within_the_policy_and_logs_them_there(policed, _server):
    _server.reset()
    _server.enqueue(S.tool_call("print(6 * 7)"), S.text("42"))
    safe = policed.execute("multiply", stdin=["y"])
    assert safe.status == "ok" and "42" in safe.stdout
    assert safe.prompts == []  # OI_AUTO_RUN=1 became "risky": plain code runs
    _server.enqueue(S.tool_call("import os\nos.system('rm -rf no-such-build-dir')"),
                    S.text("done"))
    risky = policed.execute("clean up", stdin=["y"])
    assert risky.status == "ok" and risky.prompts  # risky code is asked about
    logs = list((policed.tmp / "audit").glob("*.jsonl"))
    assert logs and "multiply" in logs[0].read_text()


def test_the_magic_refuses_options_below_the_policy(_server, tmp_path):
    _server.reset()
    admin_dir = tmp_path / "admin"
    path = write_policy(admin_dir, {"approval": "always", "max_steps": 2})
    env = oi_env(_server, tmp_path, JUPYTER_CONFIG_PATH=str(admin_dir), OI_AUTO_RUN="0")
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        for cell in ("%%oi -y\ndo it", "%%oi --max-steps 5\ndo it", "%oi auto_run on"):
            result = ks.execute(cell)
            assert result.status == "error" and str(path) in result.text, (cell, result.text)
        assert _server.requests == []
