"""The kernel application: ipykernel's app, running OIKernel, reading ``oi_kernel_config.py``."""

from __future__ import annotations

import logging
from typing import Any

from ipykernel.kernelapp import IPKernelApp
from traitlets import Type, default

from oi_kernel.kernel.subscribers import IOPubSubscribers


class OIKernelApp(IPKernelApp):
    """Launches the Open Interpreter kernel."""

    name = "oi-kernel"

    kernel_class = Type("oi_kernel.kernel.OIKernel", klass="ipykernel.kernelbase.Kernel")

    @default("config_file_name")
    def _config_file_name_default(self) -> str:
        return "oi_kernel_config"

    def init_config_files(self) -> None:  # also look in the Jupyter config path
        super().init_config_files()
        from jupyter_core.paths import jupyter_config_path

        for path in reversed(jupyter_config_path()):
            if path not in self.config_file_paths:
                self.config_file_paths.insert(0, path)

    def _configure_logging(self) -> None:
        """The app's logger at the level of its most verbose handler, not at DEBUG: traitlets
        leaves it at DEBUG and filters in the handler, so every ``log.debug`` of ipykernel
        made a record that nobody printed (four per request, ~80 µs of a direct cell's
        round trip, benchmarks/overhead.py). ``--debug`` or ``log_level`` still lower it."""
        super()._configure_logging()
        levels = [h.level for h in self.log.handlers if h.level > logging.NOTSET]
        if levels and len(levels) == len(self.log.handlers):
            self.log.setLevel(min(levels))

    def init_iopub(self, context: Any) -> None:
        """Count IOPub's subscribers from the moment it is bound: the kernel's first
        ``kernel_info`` reply waits for one (``kernel.subscribers``)."""
        super().init_iopub(context)
        self.iopub_subscribers = IOPubSubscribers()
        self.iopub_subscribers.watch(self.iopub_thread)

    def init_shell(self) -> None:  # no IPython shell in the wrapper
        self.shell = None

    def init_sockets(self) -> None:
        """No kernel subshells: the wrapper's state (the child's sockets, the engine, the
        session log) belongs to the main thread's event loop, so a request must not run
        in a subshell's thread. Without ipykernel's shell-channel thread each request
        also skips a thread hop each way (0.2–0.4 ms of a direct cell's round trip,
        benchmarks/overhead.py); comm messages still reach an awaiting cell."""
        super().init_sockets()
        self.shell_channel_thread = None


def main(**kwargs: Any) -> None:
    OIKernelApp.launch_instance(**kwargs)
