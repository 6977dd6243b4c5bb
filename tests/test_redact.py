"""Tests for oi_kernel.safety.redact: secrets never reach the LLM, logs or exports."""

from __future__ import annotations

import hashlib
import string
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oi_kernel.safety.redact import (
    REDACTED,
    is_secret_name,
    redact,
    redact_obj,
    secret_values_from_env,
)

KEY_SHAPED = [
    "sk-" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ012345678901",
    "sk-proj-" + "Ab3dEf6hIj9kLmN0pQrStUvWxYz_12345-abcdefgh",
    "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-dcba_9876",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a" * 18 + "0123456789abcdef12",
    "gho_" + "B1" * 18,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "xoxp-1234567890-abcdefghij",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
]


@pytest.mark.parametrize("key", KEY_SHAPED)
def test_key_shapes_are_redacted_inside_text(key: str) -> None:
    text = f"config = {{'key': '{key}'}} # done"
    out = redact(text)
    assert key not in out
    assert out == f"config = {{'key': '{REDACTED}'}} # done"


def test_bearer_token_keeps_the_prefix() -> None:
    text = "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc123-_x"
    assert redact(text) == f"Authorization: Bearer {REDACTED}"


def test_private_key_block() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{block}\nafter") == f"key:\n{REDACTED}\nafter"


def test_truncated_private_key_is_redacted_to_the_end() -> None:
    assert redact("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk") == f"x {REDACTED}"


def test_exact_secret_inside_other_text() -> None:
    secret = "hunter2-correct-horse"
    text = f"password is{secret}and then {secret}."
    assert redact(text, [secret]) == f"password is{REDACTED}and then {REDACTED}."


def test_longest_secret_wins() -> None:
    assert redact("abcdefgh12345678", ["abcdefgh", "abcdefgh12345678"]) == REDACTED


def test_regex_metacharacters_in_secrets() -> None:
    secret = "a.b*c+d?(e)[f]"
    assert redact(f"x{secret}y", [secret]) == f"x{REDACTED}y"
    assert redact("aXbbbcdde", [secret]) == "aXbbbcdde"


@pytest.mark.parametrize(
    "text",
    [
        hashlib.sha256(b"print('hello')").hexdigest(),
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "9fceb02",
        "the token budget is 4000 tokens; key points follow",
        "pip install scikit-learn sk-learn-is-not-a-key-at-all-really",
        "Bearer of bad news",
        "AKIA is a prefix, AKIAshort too",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "task-1234567890123456789012345",
        "ask-1234567890123456789012345",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    ],
)
def test_ordinary_text_survives(text: str) -> None:
    assert redact(text) == text


def test_secret_values_from_env() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abcdefghijklmnop",
        "OI_API_KEY": "oi-key-12345678",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "GITHUB_TOKEN": "tok-1234567890",
        "DB_PASSWORD": "short",
        "MYSQL_ROOT_PASSWORD": "longenough123",
        "HOME": "/home/user-with-long-name",
        "TOKENIZERS_PARALLELISM": "false-but-long",
        "PWD": "/home/user/project",
    }
    values = secret_values_from_env(env)
    assert set(values) == {
        "sk-abcdefghijklmnop",
        "oi-key-12345678",
        "wJalrXUtnFEMI/K7MDENG",
        "tok-1234567890",
        "longenough123",
    }
    assert [len(v) for v in values] == sorted((len(v) for v in values), reverse=True)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("anthropic_api_key", True),
        ("SLACK_BOT_TOKEN", True),
        ("CLIENT_SECRET", True),
        ("PGPASSWORD", True),
        ("GITHUB_PAT", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("KEYBOARD_LAYOUT", False),
        ("MAX_TOKENS", False),
        ("PATH", False),
        ("SSH_AUTH_SOCK", False),
    ],
)
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redact_obj_walks_json_structures() -> None:
    secret = "s3cr3t-value-xyz"
    obj = {
        "event": "llm_request",
        "messages": [{"role": "user", "content": f"use {secret}"}],
        "n": 3,
        "ok": True,
        "none": None,
        secret: ("a", secret),
    }
    assert redact_obj(obj, [secret]) == {
        "event": "llm_request",
        "messages": [{"role": "user", "content": f"use {REDACTED}"}],
        "n": 3,
        "ok": True,
        "none": None,
        REDACTED: ("a", REDACTED),
    }


def test_redact_is_fast_on_a_megabyte() -> None:
    line = "ordinary log line with numbers 1234567890 and words, sk-notakey, Bearer x\n"
    text = line * (1_000_000 // len(line)) + "sk-" + "A1" * 24
    secrets = [f"secret-value-{i:04d}" for i in range(20)]
    start = time.perf_counter()
    out = redact(text, secrets)
    assert time.perf_counter() - start < 2.0
    assert out.endswith(REDACTED)


SECRET_CHARS = string.ascii_letters + string.digits + "-_/+=.:@"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(SECRET_CHARS, min_size=8, max_size=40), min_size=1, max_size=4),
    st.lists(st.text(max_size=30), max_size=6),
)
def test_output_never_contains_a_secret(secrets: list[str], fillers: list[str]) -> None:
    assume(all(s not in REDACTED for s in secrets))
    pieces = [p for pair in zip(fillers, secrets * 3, strict=False) for p in pair]
    text = "".join(pieces + secrets)
    out = redact(text, secrets)
    assert not any(s in out for s in secrets)
    assert not any(s in str(redact_obj({"t": [text]}, secrets)) for s in secrets)


def test_secrets_of_os_environ_follow_its_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan of os.environ is cached, but a variable set, changed or removed during the
    session (``%%oi`` code runs in the user's process) is seen by the next call."""
    monkeypatch.setenv("OI_TEST_DB_PASSWORD", "first-value-123")
    assert "first-value-123" in secret_values_from_env()
    monkeypatch.setenv("OI_TEST_DB_PASSWORD", "second-value-456")
    values = secret_values_from_env()
    assert "second-value-456" in values and "first-value-123" not in values
    values.clear()  # a caller's list is its own: the cached one is not emptied
    assert "second-value-456" in secret_values_from_env()
    monkeypatch.delenv("OI_TEST_DB_PASSWORD")
    assert "second-value-456" not in secret_values_from_env()


def test_environ_scan_runs_again_only_after_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    from oi_kernel.safety.redact import per_environ

    calls: list[int] = []

    def scan() -> int:
        calls.append(1)
        return len(calls)

    assert per_environ("test-scan", scan) == 1
    assert per_environ("test-scan", scan) == 1
    monkeypatch.setenv("OI_TEST_CHANGE", "x")
    assert per_environ("test-scan", scan) == 2
    assert len(calls) == 2
