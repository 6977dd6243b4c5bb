"""Installing the Open Interpreter kernelspec: ``oi-kernel install`` and, for headless runs,
``ensure_kernelspec`` when it is missing. The logos come with the package (the wheel puts
the repository's ``kernelspec/`` logos into ``oi_kernel/data/kernelspec``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "open-interpreter"
DISPLAY_NAME = "Open Interpreter"
LOGOS = ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg")


def kernel_json(display_name: str = DISPLAY_NAME, env: dict[str, str] | None = None) -> dict:
    """A kernelspec that runs the kernel with the current interpreter."""
    spec = {
        "argv": [sys.executable, "-m", "oi_kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "markdown",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }
    if env:
        spec["env"] = env
    return spec


def logo_dir() -> Path:
    """Where the kernelspec logos are: in the installed package, or the repository's
    ``kernelspec/`` in a source checkout."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "data" / "kernelspec", package.parent / "kernelspec"):
        if all((candidate / name).is_file() for name in LOGOS):
            return candidate
    raise FileNotFoundError("the kernelspec logos are missing from the package; reinstall it")


def _profile_env(profile: str | None, name: str, display: str) -> tuple[str, str, dict | None]:
    """For ``--profile NAME``: check the profile, name the kernelspec after it, and the
    environment that selects it."""
    if not profile:
        return name, display, None
    from oi_kernel.session.profiles import load_profile

    loaded = load_profile(profile)  # a clear error now, not when the kernel starts
    if name == KERNEL_NAME:
        name = f"{KERNEL_NAME}-{loaded.name.lower()}"
    if display == DISPLAY_NAME:
        display = f"{DISPLAY_NAME} ({loaded.name})"
    is_path = loaded.path is not None and profile.endswith((".yaml", ".yml"))
    return name, display, {"OI_PROFILE": str(loaded.path.resolve()) if is_path else profile}


def install_kernelspec(
    name: str = KERNEL_NAME,
    display_name: str = DISPLAY_NAME,
    *,
    user: bool = False,
    sys_prefix: bool = False,
    prefix: str | None = None,
    profile: str | None = None,
) -> tuple[str, str, str]:
    """Install the kernelspec (with its logos); returns (name, display name, directory)."""
    from jupyter_client.kernelspec import KernelSpecManager

    name, display_name, env = _profile_env(profile, name, display_name)
    logos = logo_dir()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / name
        src.mkdir()
        for logo in LOGOS:
            shutil.copy(logos / logo, src / logo)
        (src / "kernel.json").write_text(json.dumps(kernel_json(display_name, env), indent=2))
        dest = KernelSpecManager().install_kernel_spec(
            str(src), kernel_name=name, user=user, prefix=sys.prefix if sys_prefix else prefix
        )
    return name, display_name, dest


def ensure_kernelspec(name: str = KERNEL_NAME) -> None:
    """Install the Open Interpreter kernelspec into this environment when it is missing
    (or points at a Python that no longer exists)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
        program = spec.argv[0] if spec.argv else ""
        if not os.path.isabs(program) or os.path.exists(program):
            return
    except NoSuchKernel:
        pass
    install_kernelspec(name, sys_prefix=True)
