"""The ``[mcp]`` config table: servers, transports, timeouts, environment expansion, bad input."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnmemory.agent.mcp import DEFAULT_TIMEOUT, McpServerConfig, parse_mcp_config

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

CONFIG = """
[mcp]
timeout = 12

[mcp.servers.time]
command = "python"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
env = { TZ = "UTC" }

[mcp.servers.docs]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
timeout = 60
startup_timeout = 5
"""


def test_servers_are_read_in_file_order_with_their_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cr3t-value")
    time, docs = parse_mcp_config(tomllib.loads(CONFIG)["mcp"])
    assert time == McpServerConfig(
        name="time",
        command="python",
        args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
        env={"TZ": "UTC"},
        timeout=12.0,
        startup_timeout=12.0,
    )
    assert time.transport == "stdio"
    assert docs.transport == "http"
    assert docs.url == "https://mcp.example.com/mcp"
    assert dict(docs.headers) == {"Authorization": "Bearer s3cr3t-value"}
    assert (docs.timeout, docs.startup_timeout) == (60.0, 5.0)


def test_credentials_stay_out_of_the_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cr3t-value")
    configs = parse_mcp_config(tomllib.loads(CONFIG)["mcp"])
    assert "s3cr3t" not in repr(configs)
    assert "TZ" not in repr(configs)


def test_the_variables_headers_name_are_secrets_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """A header's ``${NAME}`` holds a token; ``env`` and ``args`` pass on ordinary settings (``PATH``)."""
    monkeypatch.setenv("DOCS_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("TRACE_ID", "trace-value-0001")
    servers = {
        "tool": {"command": "t", "args": ["${PATH}"], "env": {"PATH": "${PATH}:/opt/bin"}},
        "docs": {"url": "https://x", "headers": {"A": "Bearer ${DOCS_TOKEN}", "B": "${TRACE_ID:-none}"}},
    }
    tool, docs = parse_mcp_config({"servers": servers})
    assert (tool.secrets, docs.secrets) == ((), ("s3cr3t-value", "trace-value-0001"))


def test_no_table_means_no_servers() -> None:
    assert parse_mcp_config(None) == ()
    assert parse_mcp_config({}) == ()


def test_timeouts_inherit_from_the_mcp_table() -> None:
    (plain, own) = parse_mcp_config(
        {"startup_timeout": 3, "servers": {"a": {"command": "a"}, "b": {"command": "b", "timeout": 9}}}
    )
    assert (plain.timeout, plain.startup_timeout) == (DEFAULT_TIMEOUT, 3.0)
    assert (own.timeout, own.startup_timeout) == (9.0, 3.0)
    (alone,) = parse_mcp_config({"servers": {"a": {"command": "a", "timeout": 7}}})
    assert alone.startup_timeout == 7.0


def test_defaults_in_variables_apply_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TM_UNSET_VARIABLE", raising=False)
    (server,) = parse_mcp_config(
        {"servers": {"a": {"command": "run", "args": ["--level=${TM_UNSET_VARIABLE:-info}"]}}}
    )
    assert server.args == ("--level=info",)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"server": {}}, "unknown key 'server'"),
        ({"servers": []}, "mcp.servers must be a table"),
        ({"servers": {"a": "python"}}, "mcp.servers.a must be a table"),
        ({"servers": {"a": {}}}, "give 'command' (stdio) or 'url' (HTTP)"),
        ({"servers": {"a": {"command": "x", "url": "http://h"}}}, "unknown key 'url'"),
        ({"servers": {"a": {"command": "x", "headers": {}}}}, "unknown key 'headers'"),
        ({"servers": {"a": {"command": 3}}}, "mcp.servers.a.command must be a string"),
        ({"servers": {"a": {"command": "  "}}}, "mcp.servers.a.command must not be empty"),
        ({"servers": {"a": {"command": "x", "args": "-v"}}}, "mcp.servers.a.args must be a list of strings"),
        (
            {"servers": {"a": {"command": "x", "env": {"A": 1}}}},
            "mcp.servers.a.env must be a table of strings",
        ),
        ({"servers": {"a": {"url": "ftp://h"}}}, "must be an http:// or https:// URL"),
        ({"servers": {"a": {"command": "x", "timeout": 0}}}, "timeout must be a positive number"),
        ({"servers": {"a": {"command": "x", "timeout": True}}}, "timeout must be a positive number"),
        ({"timeout": "30", "servers": {}}, "[mcp].timeout must be a positive number"),
        ({"servers": {"a b": {"command": "x"}}}, "must be 1-64 letters, digits"),
        ({"servers": {"a/b": {"command": "x"}}}, "must be 1-64 letters, digits"),
        (
            {"servers": {"a": {"command": "x", "env": {"T": "${TM_SURELY_UNSET_VAR}"}}}},
            "environment variable TM_SURELY_UNSET_VAR is not set",
        ),
    ],
)
def test_bad_tables_get_one_line_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_mcp_config(table)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@PROPERTY
@given(
    st.dictionaries(st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True), st.text(max_size=30), max_size=4)
)
def test_any_valid_stdio_table_round_trips(env: dict[str, str]) -> None:
    literal = {key: value.replace("${", "$ {") for key, value in env.items()}
    (server,) = parse_mcp_config({"servers": {"s": {"command": "run", "env": literal}}})
    assert dict(server.env) == literal
    assert server.command == "run"
