"""The README stays short and its two commands true; the documentation's generated references
cover every setting and every command; every ``OI_*`` variable is documented; the relative
links of README.md, CONTRIBUTING.md and docs/ resolve (offline)."""

from __future__ import annotations

import ast
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
from traitlets.traitlets import DefaultHandler

from oi_kernel import config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import check_links  # noqa: E402
import oi_reference  # noqa: E402

README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
INSTALL = ('python3 -m venv .venv && .venv/bin/pip install ".[lab,local]" '
           "&& .venv/bin/oi-kernel quickstart")
# Traits whose environment variable is read where the value is used, not by their @default.
READ_ELSEWHERE = {
    ("Tools", "mcp_config"): "oi_kernel/execution/mcp/config.py",
    ("Tools", "pin_file"): "oi_kernel/execution/mcp/pins.py",
    ("Profile", "name"): "oi_kernel/session/profile_state.py",
}


def bash_lines(text: str) -> list[str]:
    """The lines of the ```bash blocks of ``text``."""
    return [line for block in re.findall(r"```bash\n(.*?)```", text, re.S)
            for line in block.splitlines()]


# ----------------------------------------------------------------------------- README
def test_the_readme_reads_in_two_minutes():
    assert len(README) <= 12_000, (
        f"README.md has {len(README):,} characters (at most 12,000): move details to a page "
        "in docs/ and link it")


def test_the_readme_install_command_is_what_a_fresh_machine_needs():
    assert INSTALL in bash_lines(README)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {"lab", "local", "docs"} <= set(project["optional-dependencies"])
    assert project["scripts"]["oi-kernel"] == "oi_kernel.cli:main"
    from oi_kernel.cli.app import build_parser

    parser = build_parser()
    assert parser.parse_args(["quickstart"]).func.__name__ == "cmd_quickstart"


def test_the_readme_test_commands_are_what_ci_runs():
    lines = [line.split("#")[0].strip() for line in bash_lines(README)]
    assert "scripts/test --fast" in lines and "scripts/test" in lines
    script = (ROOT / "scripts" / "test").read_text()
    assert os.access(ROOT / "scripts" / "test", os.X_OK)
    assert '"${1:-}" = "--fast"' in script and 'pip_install ".[test,local-server,docs]"' in script
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "timed scripts/test" in ci and "timed scripts/test --setup-only" in ci
    assert any(line.startswith("timed .venv/bin/sphinx-build -W -n ") for line in ci)
    assert "timed .venv/bin/python docs/_ext/check_links.py" in ci
    # CONTRIBUTING.md, where the test layers are described, shows the same two commands
    readme_tests = [line for line in bash_lines(README) if line.startswith("scripts/test")]
    assert readme_tests == [line for line in bash_lines(CONTRIBUTING)
                            if line.startswith("scripts/test")]


# ----------------------------------------------------------------------------- configuration
def _config_traits_in_source() -> set[tuple[str, str]]:
    """(class, trait) of every ``config=True`` trait assignment in the package's source."""
    found = set()
    for path in (ROOT / "oi_kernel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if (isinstance(stmt, ast.Assign) and "config=True" in ast.unparse(stmt.value)):
                        found.add((node.name, stmt.targets[0].id))
    return found


def test_the_configuration_reference_lists_every_configurable_trait():
    classes = {cls.__name__: cls for cls in oi_reference.configurable_classes()}
    text = oi_reference.config_markdown()
    declared = _config_traits_in_source()
    assert len(declared) > 60
    for owner, name in declared:
        shown = [c for c, cls in classes.items() if name in oi_reference.own_config_traits(cls)
                 and any(k.__name__ == owner for k in cls.__mro__)]
        assert shown, f"{owner}.{name} is in no section of the configuration reference"
        assert f"### `c.{shown[0]}.{name}`" in text
    assert "### `c.Engine.max_steps`" in text and "`OI_MAX_STEPS`" in text
    assert "### `c.ChildKernel.gateway_url`" in text  # GatewayOptions' traits, as configured


def _tagged() -> list[tuple[type, str, object]]:
    return [(cls, name, trait) for cls in oi_reference.configurable_classes()
            for name, trait in oi_reference.own_config_traits(cls).items()
            if trait.metadata.get("env")]


def test_each_trait_declares_the_variables_its_help_names():
    for cls in oi_reference.configurable_classes():
        for name, trait in oi_reference.own_config_traits(cls).items():
            named = set(re.findall(r"\bOI_[A-Z0-9_]+", trait.help or ""))
            declared = {trait.metadata.get("env"), trait.metadata.get("env_also")} - {None}
            assert named == declared, f"c.{cls.__name__}.{name}: help names {named}, " \
                f"env tags {declared}"


class _Recording(dict):
    """An environment that remembers which variables were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


def _has_default_method(cls: type, name: str) -> bool:
    return any(isinstance(v, DefaultHandler) and v.trait_name == name
               for k in cls.__mro__ for v in vars(k).values())


@pytest.mark.parametrize("case", _tagged(), ids=lambda c: f"{c[0].__name__}.{c[1]}")
def test_the_declared_variable_is_the_one_the_default_reads(monkeypatch, case):
    cls, name, trait = case
    env = trait.metadata["env"]
    if (cls.__name__, name) in READ_ELSEWHERE:
        source = (ROOT / READ_ELSEWHERE[cls.__name__, name]).read_text()
        constant = re.search(rf'(\w+) = "{env}"', (ROOT / "oi_kernel").joinpath(
            *cls.__module__.split(".")[1:]).with_suffix(".py").read_text())
        assert env in source or (constant and constant.group(1) in source)
        return
    recording = _Recording()
    monkeypatch.setattr(os, "environ", recording)
    config.environment_value(cls.__new__(cls), name)  # the resolver's environment step
    assert env in recording.asked
    if _has_default_method(cls, name):  # a computed default, never the variable's value
        recording.asked.clear()
        getattr(cls.__new__(cls), name)
        assert env not in recording.asked
    if trait.metadata.get("env_also"):
        assert trait.metadata["env_also"] in recording.asked


def test_every_oi_variable_the_code_reads_is_documented():
    names = set()
    for path in (ROOT / "oi_kernel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"OI_[A-Z0-9_]+", node.value):
                names.add(node.value)
    assert "OI_LOG_DIR" in names and len(names) > 30
    documented = oi_reference.config_markdown() + (
        ROOT / "docs" / "reference" / "configuration.md").read_text()
    missing = sorted(n for n in names if f"`{n}`" not in documented)
    assert not missing, f"document these in docs/reference/configuration.md: {missing}"


def test_a_default_that_depends_on_the_machine_says_so():
    text = oi_reference.config_markdown()
    section = text.split("### `c.ChildKernel.gateway_username`")[1].split("###")[0]
    assert "JUPYTERHUB\\_USER" in section or "JUPYTERHUB_USER" in section
    assert os.environ.get("USER", "root") not in re.findall(r"`'(\w+)'`", section)


def test_help_text_markup_is_escaped_outside_code():
    assert oi_reference.prose("a <b> `c <d>` *e*") == "a \\<b\\> `c <d>` \\*e\\*"
    assert oi_reference.prose("odd ` tick *x*") == "odd \\` tick \\*x\\*"


# ----------------------------------------------------------------------------- magics
def test_the_magics_reference_lists_every_command():
    text = oi_reference.magics_markdown()
    from oi_kernel.session import commands

    decorated = 0
    for path in (ROOT / "oi_kernel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                decorated += sum(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "command"
                                 for d in node.decorator_list)
    assert decorated == len(commands.COMMANDS) > 20
    for name, cmd in commands.COMMANDS.items():
        entry = text.split(f"\n`%{name}", 1)[1].split("\n\n", 1)[0]
        assert (f"`%oi {name}" in entry) != cmd.needs_child
        assert (f"`/{name}" in entry) == (name != "display")  # nothing to choose in a chat
    assert "\n`%undo [N]`\n: " in text and "`%display auto|live|text`" in text


# ----------------------------------------------------------------------------- links
def test_the_relative_links_resolve():
    assert check_links.problems() == []
    assert {ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "docs" / "index.md"} <= set(
        check_links.files())


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Tools: MCP servers and your notebook's "
                                   "functions\n\n(label)=\n")
    (tmp_path / "b.md").write_text(
        "[ok](a.md#tools-mcp-servers-and-your-notebooks-functions) [ok](a.md#label)\n"
        "[gone](nothing.md) [bad anchor](a.md#nowhere) [web](https://example.invalid/x)\n"
        "`[code](not-checked.md)`\n```\n[fenced](not-checked-either.md)\n```\n")
    found = check_links.problems([tmp_path / "b.md"], root=tmp_path)
    assert found == ["b.md:2: nothing.md: no such file",
                     "b.md:2: a.md#nowhere: no heading #nowhere in a.md"]


def test_links_outside_the_site_become_repository_paths(tmp_path):
    docs = oi_reference.ROOT / "docs"
    text = ("[benchmarks/RESULTS.md](../benchmarks/RESULTS.md) and "
            "[the results](../benchmarks/RESULTS.md#x) and [a page](security.md)")
    out = oi_reference.repo_links("safety", text, docs)
    assert out == ("`benchmarks/RESULTS.md` (in the repository) and the results "
                   "(`benchmarks/RESULTS.md` in the repository) and [a page](security.md)")
