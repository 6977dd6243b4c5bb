"""The ``c.ChildKernel.gateway_*`` settings: where a gateway is and how to reach it.

``GatewayOptions`` is a base class of ``ChildKernel``, so the settings are configured on
that section; ``execution.placement`` picks the implementation from them. Nothing here
imports jupyter_server: that happens only when a gateway child starts
(``execution.gateway``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from traitlets import Bool, Float, TraitError, Unicode, default, validate
from traitlets.config import LoggingConfigurable

from oi_kernel import config

GATEWAY_EXTRA_HINT = 'pip install "oi-kernel[gateway]"'


class GatewayOptions(LoggingConfigurable):
    """The gateway settings of the child kernel (see ``execution.gateway``)."""

    gateway_url = Unicode(
        config=True,
        help="Run the child kernel on a Jupyter Kernel Gateway or Enterprise Gateway at this "
        "URL (http(s)://host:port) instead of on this machine: it is started through the "
        "gateway's REST API (kernel_name names one of the gateway's kernelspecs) and spoken "
        "to over its websocket. Sandboxing and memory limits are then the gateway's job (its "
        "kernelspecs). Needs the gateway extra: " + GATEWAY_EXTRA_HINT + ". Empty: this "
        "machine. Env: OI_CHILD_GATEWAY_URL.",
    ).tag(env="OI_CHILD_GATEWAY_URL")

    @default("gateway_url")
    def _gateway_url_default(self) -> str:
        name = self.trait_metadata("gateway_url", "env")
        value = os.environ.get(name, "").strip()
        problem = url_problem(value)
        if problem:
            config.warn(f"{name}={value!r}: {problem} The child kernel runs on "
                        "this machine.")
            return ""
        return value.rstrip("/")

    @validate("gateway_url")
    def _check_gateway_url(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip()
        problem = url_problem(value)
        if problem:
            raise TraitError(problem)
        return config.check_floor(self, "gateway_url", value.rstrip("/"))

    gateway_token = Unicode(
        config=True,
        help="Token the gateway requires, sent as 'Authorization: token TOKEN' on every "
        "request and on the websocket (a Kernel Gateway started with KG_AUTH_TOKEN). "
        "Env: OI_CHILD_GATEWAY_TOKEN.",
    ).tag(env="OI_CHILD_GATEWAY_TOKEN")

    @default("gateway_token")
    def _gateway_token_default(self) -> str:
        return os.environ.get(self.trait_metadata("gateway_token", "env"), "").strip()

    gateway_username = Unicode(
        config=True,
        help="The user the gateway starts the child kernel for, sent as KERNEL_USERNAME in "
        "the kernel start request (Enterprise Gateway refuses kernels for users it does not "
        "authorize, root among them). Default: $KERNEL_USERNAME, else $JUPYTERHUB_USER, else "
        "the user running this kernel. Env: OI_CHILD_GATEWAY_USERNAME.",
    ).tag(env="OI_CHILD_GATEWAY_USERNAME",
         doc_default="$KERNEL_USERNAME, else $JUPYTERHUB_USER, else your user name")

    @default("gateway_username")
    def _gateway_username_default(self) -> str:
        return default_username(self.trait_metadata("gateway_username", "env"))

    gateway_headers = Unicode(
        config=True,
        help="Extra HTTP headers for the gateway, as a JSON object of strings, e.g. "
        '\'{"X-Team": "data"}\'. Env: OI_CHILD_GATEWAY_HEADERS.',
    ).tag(env="OI_CHILD_GATEWAY_HEADERS")

    @default("gateway_headers")
    def _gateway_headers_default(self) -> str:
        name = self.trait_metadata("gateway_headers", "env")
        value = os.environ.get(name, "").strip()
        problem = headers_problem(value)
        if problem:
            config.warn(f"{name}: {problem} No extra headers are sent.")
            return ""
        return value

    @validate("gateway_headers")
    def _check_gateway_headers(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip()
        problem = headers_problem(value)
        if problem:
            raise TraitError(problem)
        return value

    gateway_validate_cert = Bool(
        config=True,
        help="Check the gateway's TLS certificate (https URLs). Turn it off only for a "
        "gateway with a self-signed certificate you trust; better, name its CA with "
        "gateway_ca_certs. Env: OI_CHILD_GATEWAY_VALIDATE_CERT=0 turns it off.",
    ).tag(env="OI_CHILD_GATEWAY_VALIDATE_CERT")

    @default("gateway_validate_cert")
    def _gateway_validate_cert_default(self) -> bool:
        help_text = self.traits()["gateway_validate_cert"].help
        flag = config.env_flag(self.trait_metadata("gateway_validate_cert", "env"), help=help_text)
        return True if flag is None else flag

    gateway_ca_certs = Unicode(
        config=True,
        help="A file of CA certificates (PEM) to check the gateway's certificate against. "
        "Env: OI_CHILD_GATEWAY_CA_CERTS.",
    ).tag(env="OI_CHILD_GATEWAY_CA_CERTS")

    @default("gateway_ca_certs")
    def _gateway_ca_certs_default(self) -> str:
        return os.environ.get(self.trait_metadata("gateway_ca_certs", "env"), "").strip()

    gateway_connect_timeout = Float(
        config=True,
        help="Seconds to wait for a connection to the gateway. "
        "Env: OI_CHILD_GATEWAY_CONNECT_TIMEOUT.",
    ).tag(env="OI_CHILD_GATEWAY_CONNECT_TIMEOUT")

    @default("gateway_connect_timeout")
    def _gateway_connect_timeout_default(self) -> float:
        help_text = self.traits()["gateway_connect_timeout"].help
        name = self.trait_metadata("gateway_connect_timeout", "env")
        return config.env_float(name, 20.0, minimum=0.1, help=help_text)

    gateway_request_timeout = Float(
        config=True,
        help="Seconds one request to the gateway (interrupt, restart, shutdown, a liveness "
        "check) may take; starting a kernel may take c.ChildKernel.startup_timeout. "
        "Env: OI_CHILD_GATEWAY_REQUEST_TIMEOUT.",
    ).tag(env="OI_CHILD_GATEWAY_REQUEST_TIMEOUT")

    @default("gateway_request_timeout")
    def _gateway_request_timeout_default(self) -> float:
        help_text = self.traits()["gateway_request_timeout"].help
        name = self.trait_metadata("gateway_request_timeout", "env")
        return config.env_float(name, 20.0, minimum=0.1, help=help_text)

    gateway_check_interval = Float(
        2.0,
        config=True,
        help="Seconds between checks that the gateway still has the child kernel (a kernel "
        "that dies, or a lost connection, is noticed at once anyway; this finds one deleted "
        "or culled on the gateway, and a gateway that hangs).",
    )


def default_username(env: str) -> str:
    """The gateway user when none is configured: ``$env`` (OI_CHILD_GATEWAY_USERNAME),
    KERNEL_USERNAME, JUPYTERHUB_USER (on a hub, the hub's user), else the user running this
    process."""
    for name in (env, "KERNEL_USERNAME", "JUPYTERHUB_USER"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no name for this uid (a container): let the gateway decide
        return ""


def url_problem(value: str) -> str:
    """Why ``value`` is not a gateway URL ("" when it is one, or empty)."""
    if not value:
        return ""
    if not value.lower().startswith(("http://", "https://")):
        return (f"{value!r} is not a gateway URL: it must start with http:// or https:// "
                "(e.g. http://gateway.example.org:8888).")
    return ""


def headers_problem(value: str) -> str:
    """Why ``value`` is not a JSON object of header strings ("" when it is, or empty)."""
    if not value:
        return ""
    try:
        headers = json.loads(value)
    except ValueError as exc:
        return f"not JSON ({exc}); write a JSON object such as {{\"X-Team\": \"data\"}}."
    if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        return "must be a JSON object whose keys and values are strings."
    return ""


def gateway_said(exc: BaseException) -> str:
    """The gateway's own words in a refused request: jupyter_server's ``gateway_request``
    raises ``web.HTTPError(code, "Error from Gateway: [%s] %s. ...", message, reason)``."""
    args = getattr(exc, "args", ())
    if getattr(exc, "log_message", None) and args and isinstance(args[0], str):
        return " ".join(args[0].split())
    return " ".join(str(exc).split())


_ABOUT_A_USER = ("KERNEL_USERNAME", "user", "not authorized", "unauthorized")


def refusal_hint(code: int, said: str, username: str) -> str:
    """What to do when the gateway answered 401/403: a token problem, or a user the gateway
    does not start kernels for (Enterprise Gateway: authorized_users / unauthorized_users,
    root refused by default), told apart by what the gateway said."""
    quoted = f' It said: "{said[:300]}"' if said else ""
    if code == 403 and any(word.lower() in said.lower() for word in _ABOUT_A_USER):
        who = f"'{username}'" if username else "this user"
        return (f"The gateway does not start kernels for the user {who}.{quoted} Set the user "
                "it should start the kernel for with OI_CHILD_GATEWAY_USERNAME / "
                "c.ChildKernel.gateway_username (sent as KERNEL_USERNAME), or ask the "
                "gateway's administrator to authorize this user.")
    return (f"The gateway refused the request ({code}).{quoted} If it needs a token, set the "
            "right one with OI_CHILD_GATEWAY_TOKEN / c.ChildKernel.gateway_token.")
