"""The child kernel on a real Jupyter Enterprise Gateway 3.3 (issue 31). Enterprise Gateway pins
an older jupyter_client than ours, so it runs from its own virtual environment, created on
first use in ``$OI_TEST_EG_VENV`` (default ``~/.cache/oi-kernel-tests/enterprise-gateway-3.3``)
with the package index pip is configured for. It refuses kernels for ``root`` (HTTP 403
"... Ensure KERNEL_USERNAME is set"): the start request carries KERNEL_USERNAME, and the
refusal is told as a refused user, not a token problem."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from oi_kernel.errors import ChildKernelError
from tests import gateway_support as G
from tests.test_gateway import _kernel_username

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(900)]

EG_VERSION = "3.3.0"
EG_VENV = Path(os.environ.get("OI_TEST_EG_VENV") or
               Path.home() / ".cache" / "oi-kernel-tests" / "enterprise-gateway-3.3")


def eg_executable() -> Path:
    """``jupyter-enterprisegateway`` of its own venv (created when missing)."""
    exe = EG_VENV / "bin" / "jupyter-enterprisegateway"
    if not exe.exists():
        python = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([python, "-m", "venv", "--clear", str(EG_VENV)], check=True, timeout=120)
        subprocess.run([str(EG_VENV / "bin" / "pip"), "install", "-q",
                        f"jupyter-enterprise-gateway=={EG_VERSION}", "ipykernel"],
                       check=True, timeout=700)
    return exe


@pytest.fixture(scope="module")
def enterprise_gateway():
    port, token = G.free_port(), secrets.token_hex(16)
    runtime = tempfile.mkdtemp(prefix="eg-runtime-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "KERNEL_USERNAME")}
    env.update(JUPYTER_RUNTIME_DIR=runtime, EG_AUTH_TOKEN=token)
    argv = [str(eg_executable()), "--EnterpriseGatewayApp.ip=127.0.0.1",
            f"--EnterpriseGatewayApp.port={port}", "--EnterpriseGatewayApp.port_retries=0"]
    log_path = os.path.join(runtime, "gateway.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    gateway = G.Gateway(f"http://127.0.0.1:{port}", token, port, proc, argv, env, log_path)
    try:
        G._wait_ready(gateway.url, token, proc, 90)
        yield gateway
    finally:
        G.stop(gateway)


def test_root_is_refused_and_told_as_a_user_problem(enterprise_gateway, monkeypatch):
    with pytest.raises(ChildKernelError) as caught:
        _kernel_username(enterprise_gateway, gateway_username="root")
    text = str(caught.value)
    assert "403" in text and "does not start kernels for the user 'root'" in text, text
    assert "KERNEL_USERNAME" in text and "c.ChildKernel.gateway_username" in text
    assert "refused the token" not in text


def test_a_user_it_authorizes_gets_a_kernel_that_sees_it(enterprise_gateway):
    assert _kernel_username(enterprise_gateway, gateway_username="ada") == "ada"
