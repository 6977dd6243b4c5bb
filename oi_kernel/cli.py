"""The ``oi-kernel`` command: install the kernelspec, export, verify.

Each subcommand is a small function taking parsed arguments and returning an
exit code; errors of ours print their message (which says how to fix things)
without a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import OIError

KERNEL_NAME = "open-interpreter"
DISPLAY_NAME = "Open Interpreter"


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


def cmd_install(args: argparse.Namespace) -> int:
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / args.name
        src.mkdir()
        logos = Path(__file__).parent / "resources"
        if logos.is_dir():
            for logo in logos.glob("logo-*.png"):
                shutil.copy(logo, src / logo.name)
        (src / "kernel.json").write_text(json.dumps(kernel_json(args.display_name), indent=2))
        prefix = sys.prefix if args.sys_prefix else args.prefix
        dest = KernelSpecManager().install_kernel_spec(
            str(src), kernel_name=args.name, user=args.user, prefix=prefix
        )
    print(f"Installed kernelspec {args.name} ({args.display_name}) in {dest}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_notebook

    out = export_notebook(
        args.log, args.output, include_failed=args.include_failed, force=args.force
    )
    print(f"Wrote {out}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .export import verify_notebook

    report = verify_notebook(
        args.notebook, in_place=args.in_place, timeout=args.timeout, kernel_name=args.kernel
    )
    print(report.format())
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oi-kernel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("install", help="install the Open Interpreter kernelspec")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for this user only")
    where.add_argument("--sys-prefix", action="store_true", help="install into sys.prefix (venv)")
    where.add_argument("--prefix", help="install under this prefix")
    p.add_argument("--name", default=KERNEL_NAME, help="kernelspec name")
    p.add_argument("--display-name", default=DISPLAY_NAME, help="name shown in Jupyter")
    p.set_defaults(func=cmd_install)

    p = sub.add_parser("export", help="write a session log as a reproducible python3 notebook")
    p.add_argument("log", help="the session log (.jsonl); %%log in the kernel prints its path")
    p.add_argument("-o", "--output", required=True, help="notebook to write")
    p.add_argument("--include-failed", action="store_true", help="keep failed steps, marked")
    p.add_argument("--force", action="store_true", help="overwrite an existing notebook")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("verify", help="re-run a notebook and compare with its recorded outputs")
    p.add_argument("notebook")
    p.add_argument(
        "--in-place",
        action="store_true",
        help="run in the notebook's own directory (default: a temporary copy)",
    )
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    p.add_argument("--kernel", default=None, help="kernelspec to run it with")
    p.set_defaults(func=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except OIError as exc:
        print(f"oi-kernel: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"oi-kernel: {exc.filename or exc}: no such file", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
