"""The agent's credentials, as properties: once remembered, no value survives in a host command's
environment (under any name, inside any value), in a scrubbed tool result (at any depth, anywhere in
a string), or in redacted text; everything else of the environment and the result is kept."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory import redaction
from turnmemory.agent import _credentials

VALUES = ("quartz-meadow-lantern-6120-oak", "x7Kp2Qw9Zt4Lm8Rn3Vb6")
"""Credentials remembered once for the module (remembering is for the whole process)."""
_credentials.remember(VALUES)

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_WITH_SECRETS = st.lists(st.one_of(_TEXT, st.sampled_from(VALUES)), max_size=6).map("".join)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _WITH_SECRETS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_WITH_SECRETS, inner, max_size=4)),
    max_leaves=12,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


@settings(max_examples=80)
@given(
    env=st.dictionaries(
        st.one_of(
            st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True),
            st.sampled_from(sorted(_credentials.CREDENTIAL_VARIABLES)),
        ),
        _WITH_SECRETS.map(lambda value: value.replace("\0", "")),  # what an environment can hold
        max_size=8,
    )
)
def test_no_remembered_value_reaches_a_host_environment(env: dict[str, str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        host = _credentials.host_environment({"EXTRA": "kept"})
    assert host["EXTRA"] == "kept"
    for name, value in env.items():
        named = name in _credentials.CREDENTIAL_VARIABLES
        holds = any(secret in value for secret in VALUES) or named
        assert (name in host) == (not holds), name
    assert not any(secret in value for value in host.values() for secret in VALUES)


@settings(max_examples=120)
@given(result=_JSON)
def test_a_scrubbed_result_holds_no_remembered_value_and_keeps_the_rest(result: Any) -> None:
    scrubbed = _credentials.scrub(result)
    assert not any(secret in text for text in _strings(scrubbed) for secret in VALUES)
    if not any(secret in text for text in _strings(result) for secret in VALUES):
        assert scrubbed == result


@settings(max_examples=80)
@given(before=_TEXT, after=_TEXT, secret=st.sampled_from(VALUES))
def test_the_redactor_treats_a_remembered_value_as_a_secret(before: str, after: str, secret: str) -> None:
    redacted = redaction.redact(f"{before}{secret}{after}")
    assert secret not in redacted and redaction.REDACTED in redacted


def test_short_values_and_the_keyless_placeholder_are_not_taken_for_credentials() -> None:
    _credentials.remember(["short", "not-needed", None, ""])
    assert not {"short", "not-needed"} & _credentials.credentials()
    assert _credentials.scrub("a short value, not-needed") == "a short value, not-needed"


def test_config_file_keys_are_found_in_every_provider_table() -> None:
    table = {"providers": {"a": {"api_key": "one"}, "b": {"model": "m"}, "c": {"api_key": "two"}, "d": 3}}
    assert _credentials.configured_keys(table) == ["one", "two"]
    assert _credentials.configured_keys({"providers": []}) == []


def test_bedrock_keys_of_an_aws_profile_are_credentials(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("boto3")
    secret = "walnut-harbor-9044-AbCdEfGhIjKlMnOpQrSt"
    (tmp_path / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIAEXAMPLEEXAMPLE00\naws_secret_access_key = {secret}\n"
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert _credentials.aws_keys() == [secret]
