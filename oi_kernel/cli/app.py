"""The ``oi-kernel`` command: install the kernelspec, export, verify.

Each subcommand is a small function taking parsed arguments and returning an
exit code; errors of ours print their message (which says how to fix things)
without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from oi_kernel._version import __version__
from oi_kernel.cli.install import DISPLAY_NAME, KERNEL_NAME
from oi_kernel.cli.serve_local import add_serve_local_command
from oi_kernel.core import approval_modes
from oi_kernel.errors import OIError


def cmd_export(args: argparse.Namespace) -> int:
    from oi_kernel.record.export import export_notebook

    out = export_notebook(
        args.log, args.output, include_failed=args.include_failed, force=args.force
    )
    print(f"Wrote {out}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from oi_kernel.record.verify import verify_notebook

    report = verify_notebook(
        args.notebook, in_place=args.in_place, timeout=args.timeout, kernel_name=args.kernel,
        inputs_dir=args.inputs,
    )
    print(report.format())
    return 0 if report.ok else 1


def cmd_replay(args: argparse.Namespace) -> int:
    from oi_kernel.api.replay import replay_log

    report = replay_log(
        args.log,
        cwd=args.cwd,
        in_place=args.in_place,
        kernel_name=args.kernel,
        timeout=args.timeout,
    )
    print(report.format())
    return 0 if report.ok else 1


def add_replay_command(sub: argparse._SubParsersAction) -> None:
    """The ``replay`` subcommand (its logic lives in replay.py)."""
    p = sub.add_parser(
        "replay", help="re-run a session log with its recorded LLM replies; compare outputs"
    )
    p.add_argument("log", help="the session log (.jsonl)")
    p.add_argument(
        "--cwd", default=None, help="directory to run in (default: the session's recorded one)"
    )
    p.add_argument(
        "--in-place",
        action="store_true",
        help="run in that directory itself (default: a temporary copy)",
    )
    p.add_argument("--timeout", type=float, default=120, help="seconds one step may run")
    p.add_argument("--kernel", default=None, help="child kernelspec (default: the recorded one)")
    p.set_defaults(func=cmd_replay)


def cmd_install(args: argparse.Namespace) -> int:
    from oi_kernel.cli.install import install_kernelspec

    name, display, dest = install_kernelspec(
        args.name, args.display_name, user=args.user, sys_prefix=args.sys_prefix,
        prefix=args.prefix, profile=args.profile,
    )
    print(f"Installed kernelspec {name} ({display}) in {dest}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oi-kernel", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("install", help="install the Open Interpreter kernelspec")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for this user only")
    where.add_argument("--sys-prefix", action="store_true", help="install into sys.prefix (venv)")
    where.add_argument("--prefix", help="install under this prefix")
    p.add_argument("--name", default=KERNEL_NAME, help="kernelspec name")
    p.add_argument("--display-name", default=DISPLAY_NAME, help="name shown in Jupyter")
    p.add_argument(
        "--profile",
        help="a kernelspec that applies this profile (OI_PROFILE in its env); named "
        "open-interpreter-PROFILE, shown as 'Open Interpreter (PROFILE)'",
    )
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
    p.add_argument("--inputs", metavar="DIR", default=None,
                   help="where the files the session read are, when they are not beside the "
                   "notebook (same relative paths)")
    p.set_defaults(func=cmd_verify)
    add_headless_commands(sub)
    add_replay_command(sub)
    add_serve_local_command(sub)
    p = sub.add_parser("acp", help="run as an Agent Client Protocol agent on stdio (Jupyter AI, "
                       "Zed, any ACP client); settings as for the kernel: OI_MODEL, ...")
    p.set_defaults(func=cmd_acp)
    return parser


def cmd_acp(args: argparse.Namespace) -> int:
    from oi_kernel.acp.serve import main as serve_acp

    serve_acp()  # exits the process when the client leaves


def add_headless_commands(sub: argparse._SubParsersAction) -> None:
    """The ``run`` and ``quickstart`` subcommands (their logic lives in headless.py)."""
    p = sub.add_parser("run", help="execute a notebook of instructions headless (nbclient)")
    p.add_argument("notebook")
    p.add_argument("-o", "--output", help="executed notebook to write (default NAME-run.ipynb)")
    p.add_argument(
        "--approval",
        choices=approval_modes.UNATTENDED,
        default="never",
        help="never: run every block (default); risky: refuse blocks that are not known to be "
        "safe (see docs/security.md)",
    )
    p.add_argument(
        "-p",
        "--parameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="inject NAME = VALUE (a Python literal, else text) in a cell after the one tagged "
        "'parameters' (first when none); repeatable",
    )
    p.add_argument("--timeout", type=int, default=600,
                   help="seconds one cell may take in all (default 600); each step of an "
                   "instruction is stopped after 300 s (OI_STEP_TIMEOUT)")
    p.add_argument("--kernel", default=None, help="kernelspec (default: the notebook's)")
    p.add_argument("--cwd", default=None, help="working directory (default: the notebook's)")
    p.add_argument("--allow-errors", action="store_true", help="go on after a failing cell")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("quickstart", help="open the quickstart notebook (or run it headless)")
    p.add_argument(
        "--dir", default="oi-quickstart", help="where to copy it (default ./oi-quickstart)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--headless", action="store_true", help="run it instead of opening Lab")
    mode.add_argument("--lab", action="store_true", help="open JupyterLab even without a display")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell when headless")
    p.set_defaults(func=cmd_quickstart)


def cmd_run(args: argparse.Namespace) -> int:
    from oi_kernel.cli.headless import parse_parameters, run_notebook

    result = run_notebook(
        args.notebook,
        args.output,
        approval=args.approval,
        parameters=parse_parameters(args.parameter),
        timeout=args.timeout,
        kernel_name=args.kernel,
        cwd=args.cwd,
        allow_errors=args.allow_errors,
    )
    print(result.format())
    return 0 if result.ok else 1


def cmd_quickstart(args: argparse.Namespace) -> int:
    from oi_kernel.cli.headless import quickstart

    headless = True if args.headless else (False if args.lab else None)
    return quickstart(Path(args.dir), headless=headless, timeout=args.timeout)


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
