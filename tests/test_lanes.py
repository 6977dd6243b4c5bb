"""The unit lane's guard (tests/conftest.py) fails a `unit` test that starts a process or opens
an internet socket, so a misclassified test cannot hide in `scripts/test --fast`."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from tests.conftest import UnitLaneViolation


@pytest.mark.unit
def test_a_subprocess_is_refused() -> None:
    with pytest.raises(UnitLaneViolation, match="starts a subprocess"):
        subprocess.run(["true"], check=False)


@pytest.mark.unit
def test_os_system_is_refused() -> None:
    with pytest.raises(UnitLaneViolation, match="os.system"):
        os.system("true")


@pytest.mark.unit
@pytest.mark.parametrize("method", ["bind", "connect"])
def test_an_internet_socket_is_refused(method: str) -> None:
    with socket.socket() as s, pytest.raises(UnitLaneViolation, match=f"socket.{method}"):
        getattr(s, method)(("127.0.0.1", 9))


@pytest.mark.unit
def test_a_local_socket_pair_is_allowed() -> None:  # asyncio's event loop needs one
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"x")
        assert b.recv(1) == b"x"


@pytest.mark.kernel
def test_outside_the_unit_lane_nothing_is_refused() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0
