"""The ``c.ChildKernel.gateway_*`` settings: where a gateway is and how to reach it.

``GatewayOptions`` is a base class of ``ChildKernel``, so the settings are configured on
that section; ``execution.placement`` picks the implementation from them. Nothing here
imports jupyter_server: that happens only when a gateway child starts
(``execution.gateway``).
"""

from __future__ import annotations

import json
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

    gateway_username = Unicode(
        config=True,
        help="The user the gateway starts the child kernel for, sent as KERNEL_USERNAME in "
        "the kernel start request (Enterprise Gateway refuses kernels for users it does not "
        "authorize, root among them). Default: $KERNEL_USERNAME, else $JUPYTERHUB_USER, else "
        "the user running this kernel. Env: OI_CHILD_GATEWAY_USERNAME.",
    ).tag(env="OI_CHILD_GATEWAY_USERNAME", env_fallbacks=("KERNEL_USERNAME", "JUPYTERHUB_USER"),
         doc_default="$KERNEL_USERNAME, else $JUPYTERHUB_USER, else your user name")

    @default("gateway_username")
    def _gateway_username_default(self) -> str:
        """Without c.ChildKernel.gateway_username or any of its variables (set before this is
        asked): this process's user."""
        return user_name()

    gateway_headers = Unicode(
        config=True,
        help="Extra HTTP headers for the gateway, as a JSON object of strings, e.g. "
        '\'{"X-Team": "data"}\'. Env: OI_CHILD_GATEWAY_HEADERS.',
    ).tag(env="OI_CHILD_GATEWAY_HEADERS")

    @validate("gateway_headers")
    def _check_gateway_headers(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip()
        problem = headers_problem(value)
        if problem:
            raise TraitError(problem)
        return value

    gateway_validate_cert = Bool(
        True,
        config=True,
        help="Check the gateway's TLS certificate (https URLs). Turn it off only for a "
        "gateway with a self-signed certificate you trust; better, name its CA with "
        "gateway_ca_certs. Env: OI_CHILD_GATEWAY_VALIDATE_CERT=0 turns it off.",
    ).tag(env="OI_CHILD_GATEWAY_VALIDATE_CERT")

    gateway_ca_certs = Unicode(
        config=True,
        help="A file of CA certificates (PEM) to check the gateway's certificate against. "
        "Env: OI_CHILD_GATEWAY_CA_CERTS.",
    ).tag(env="OI_CHILD_GATEWAY_CA_CERTS")

    gateway_connect_timeout = Float(
        20.0,
        config=True,
        help="Seconds to wait for a connection to the gateway. "
        "Env: OI_CHILD_GATEWAY_CONNECT_TIMEOUT.",
    ).tag(env="OI_CHILD_GATEWAY_CONNECT_TIMEOUT", env_min=0.1)

    gateway_request_timeout = Float(
        20.0,
        config=True,
        help="Seconds one request to the gateway (interrupt, restart, shutdown, a liveness "
        "check) may take; starting a kernel may take c.ChildKernel.startup_timeout. "
        "Env: OI_CHILD_GATEWAY_REQUEST_TIMEOUT.",
    ).tag(env="OI_CHILD_GATEWAY_REQUEST_TIMEOUT", env_min=0.1)

    gateway_check_interval = Float(
        2.0,
        config=True,
        help="Seconds between checks that the gateway still has the child kernel (a kernel "
        "that dies, or a lost connection, is noticed at once anyway; this finds one deleted "
        "or culled on the gateway, and a gateway that hangs).",
    )


def user_name() -> str:
    """The user running this process ("" when it has no name), the gateway user when neither
    the config nor OI_CHILD_GATEWAY_USERNAME, KERNEL_USERNAME or JUPYTERHUB_USER (on a hub,
    the hub's user) names one."""
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
