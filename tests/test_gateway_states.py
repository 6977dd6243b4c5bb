"""A gateway kernel lost behind our back (deleted on the gateway, as culling does): the next
instruction starts a new kernel there and says so, ``%rebuild`` brings the variables back,
and a named state saved before is restored through its recorded steps. A real Jupyter
Kernel Gateway on 127.0.0.1 (``tests.gateway_support``)."""

from __future__ import annotations

import pytest

from oi_kernel.session.assembly import RESTART_NOTICE
from tests import gateway_support as G
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_gateway import gateway_env

pytestmark = pytest.mark.timeout(300)
# a Fraction is not builtin data: the state's variables are held by a fork of the kernel
COMPUTE = "from fractions import Fraction\nn = 21\ntotal = Fraction(n * 2)\nprint(total)"


@pytest.fixture(scope="module")
def gateway():
    with G.kernel_gateway() as gw:
        yield gw


def test_a_deleted_gateway_kernel_is_replaced_and_rebuilt(gateway, llm_server, tmp_path):
    with KernelSession(env=gateway_env(llm_server, tmp_path, gateway, OI_AUTO_RUN="1"),
                       cwd=str(tmp_path)) as ks:
        llm_server.enqueue(S.tool_call(COMPUTE), S.text("42."))
        assert "42" in ks.execute("compute the total", timeout=120).stdout
        assert "held by a fork" in ks.execute("%state save before").text
        (kernel,) = gateway.kernels()
        status, _ = gateway.api(f"/api/kernels/{kernel['id']}", "DELETE")  # culled
        assert status == 204
        gateway.wait_for_kernels(0)

        llm_server.enqueue(S.tool_call("print('total' in dir())"), S.text("Gone."))
        after = ks.execute("is the total still there?", timeout=120)
        assert after.status == "ok", after.text
        assert after.stdout.splitlines()[0] == "False", after.text
        assert "no longer has the child kernel" in after.text or "a new one was started there" \
            in after.text, after.text
        assert RESTART_NOTICE in after.text and "%rebuild" in after.text
        (new,) = gateway.kernels()
        assert new["id"] != kernel["id"]

        done = ks.execute("%rebuild", timeout=120)
        assert "Rebuilt**: 1 of 1" in done.text, done.text
        assert ks.execute("%%python\nprint(total)", timeout=60).stdout == "42\n"
        ks.execute("%%python\ntotal = 0")
        back = ks.execute("%state restore before", timeout=120)
        assert "Rebuilding state `before`" in back.text, back.text
        assert ks.execute("%%python\nprint(total)", timeout=60).stdout == "42\n"
