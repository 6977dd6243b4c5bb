"""What a refused gateway request tells the user (issue 31): a 403 about the user is not a
token problem; the gateway's own words are quoted; the user sent as KERNEL_USERNAME comes
from the setting, else KERNEL_USERNAME, JUPYTERHUB_USER, the OS user."""

from __future__ import annotations

import getpass

import pytest
from tornado import web

from oi_kernel.execution.child import ChildKernel
from oi_kernel.execution.gateway_options import gateway_said, refusal_hint
from oi_kernel.session.resolved import source_of

pytestmark = pytest.mark.unit

EG_403 = ("User 'root' is not authorized to start kernel 'python3'. Ensure KERNEL_USERNAME "
          "is set to an appropriate value and retry the request.")


def refused(code: int, message: str) -> web.HTTPError:
    """What jupyter_server's gateway_request raises for a refused request."""
    return web.HTTPError(code, "Error from Gateway: [%s] %s. Ensure gateway url is valid and "
                         "the Gateway instance is running.", message, "Forbidden")


def test_a_403_about_the_user_names_the_user_setting_not_the_token():
    hint = refusal_hint(403, gateway_said(refused(403, EG_403)), "root")
    assert "does not start kernels for the user 'root'" in hint
    assert EG_403 in hint  # what the gateway said
    assert "c.ChildKernel.gateway_username" in hint and "OI_CHILD_GATEWAY_USERNAME" in hint
    assert "token" not in hint.lower()


@pytest.mark.parametrize("code", [401, 403])
def test_a_refusal_about_nothing_else_points_at_the_token(code):
    hint = refusal_hint(code, gateway_said(refused(code, "Forbidden")), "ada")
    assert f"refused the request ({code})" in hint and '"Forbidden"' in hint
    assert "OI_CHILD_GATEWAY_TOKEN" in hint


@pytest.mark.parametrize(("env", "expected", "source"), [
    ({"OI_CHILD_GATEWAY_USERNAME": "a", "KERNEL_USERNAME": "b", "JUPYTERHUB_USER": "c"}, "a",
     "OI_CHILD_GATEWAY_USERNAME"),
    ({"KERNEL_USERNAME": "b", "JUPYTERHUB_USER": "c"}, "b", "KERNEL_USERNAME"),
    ({"JUPYTERHUB_USER": "c"}, "c", "JUPYTERHUB_USER"),
    ({}, None, "default"),
])
def test_the_default_user(monkeypatch, env, expected, source):
    for name in ("OI_CHILD_GATEWAY_USERNAME", "KERNEL_USERNAME", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    child = ChildKernel()
    assert child.gateway_username == (expected or getpass.getuser())
    assert source_of(child, "gateway_username") == source  # what %config shows
