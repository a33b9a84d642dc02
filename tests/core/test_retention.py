"""Retention rules: targets, outcomes, sanitizers and secret redaction."""

from __future__ import annotations

import json

import pytest

import turnmemory as tm
from turnmemory.retention import (
    DEFAULT_RULES,
    REDACTED,
    ToolRule,
    bound_text,
    normalize_mcp_tool,
    path_target,
    redact,
    relativize,
    retain,
    sanitize_url,
)

WS = "/home/dev/repo"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (f"{WS}/dir/file.go", "dir/file.go"),
        (f"{WS}", "."),
        (f"{WS}/", "."),
        (f"{WS}/a/../b.go", "b.go"),
        ("/home/dev/repo-other/x.go", "/home/dev/repo-other/x.go"),
        ("/home/dev/outside.go", "/home/dev/outside.go"),
        (f"{WS}/../escape.go", "/home/dev/escape.go"),
        ("src/./main.py", "src/main.py"),
        ("../up.py", "../up.py"),
    ],
)
def test_relativize(path: str, expected: str) -> None:
    assert relativize(path, WS) == expected


def test_relativize_windows_paths_case_insensitively() -> None:
    assert relativize("c:\\Users\\Dev\\Proj\\src\\App.tsx", "C:\\Users\\dev\\proj") == "src/App.tsx"
    assert relativize("D:\\other\\x.txt", "C:\\Users\\dev\\proj") == "D:/other/x.txt"


def test_relativize_without_workspace_keeps_absolute_paths() -> None:
    assert relativize("/etc/hosts", None) == "/etc/hosts"


def call(
    name: str, args: dict[str, object], output: object = None, error: str | None = None
) -> tm.ToolActivity:
    return retain(5, name, args, output=output, error=error, workspace=WS)


def test_file_tools_keep_the_relative_path() -> None:
    for name in ("read_file", "write_file", "edit_file"):
        act = call(
            name, {"path": f"{WS}/src/a.py", "content": "SECRET CONTENT", "oldString": "x", "newString": "y"}
        )
        assert act.target == "src/a.py"
        assert "SECRET CONTENT" not in json.dumps(act.to_dict())


def test_file_changed_comes_from_the_output_only() -> None:
    assert (
        call("write_file", {"path": f"{WS}/a.go"}, output={"file_changed": f"{WS}/a.go"}).file_changed
        == "a.go"
    )
    assert call("write_file", {"path": f"{WS}/a.go"}, output={"bytes_written": 3}).file_changed is None
    assert call("edit_file", {"path": f"{WS}/a.go"}, output={"file_changed": ""}).file_changed is None


def test_outcomes_only_on_success() -> None:
    act = call("edit_file", {"path": f"{WS}/a.go"}, output={"file_changed": f"{WS}/a.go"}, error="boom")
    assert act.status == "error"
    assert act.file_changed is None
    bash = call("bash", {"command": "make"}, output={"exit_code": 2}, error="timeout")
    assert (bash.status, bash.exit_code, bash.failed_command) == ("error", None, None)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"pattern": "**/*.go", "path": WS}, "**/*.go"),
        ({"pattern": "TODO", "path": f"{WS}/src"}, "src :: TODO"),
        ({"pattern": "TODO"}, "TODO"),
        ({"path": f"{WS}/src"}, "src"),
        ({"pattern": "x", "path": "."}, "x"),
    ],
)
def test_search_targets(args: dict[str, object], expected: str) -> None:
    assert call("grep", args).target == expected
    assert call("glob", args).target == expected


def test_bash_failed_command_from_output_else_input() -> None:
    from_output = call(
        "bash", {"command": "make test"}, output={"exit_code": 1, "failed_command": "make   test\n"}
    )
    assert (from_output.failed_command, from_output.exit_code, from_output.target) == (
        "make test",
        1,
        "make test",
    )
    from_input = call("bash", {"command": "go test ./..."}, output={"exit_code": 1})
    assert (from_input.failed_command, from_input.exit_code) == ("go test ./...", 1)


@pytest.mark.parametrize(
    "output", [{"exit_code": 0}, {"exit_code": True}, {"exit_code": "1"}, {}, "text", None]
)
def test_bash_without_a_nonzero_integer_exit_code_keeps_no_outcome(output: object) -> None:
    act = call("bash", {"command": "ls"}, output=output)
    assert (act.failed_command, act.exit_code) == (None, None)


def test_web_fetch_url_is_stripped_of_credentials_query_and_fragment() -> None:
    act = call("web_fetch", {"url": "https://user:pass@Example.com:8443/docs/x?token=secret#section"})
    assert act.target == "https://example.com:8443/docs/x"


@pytest.mark.parametrize("url", ["not a url", "example.com/path", "http://", "https://[::1"])
def test_web_fetch_without_scheme_and_host_keeps_no_target(url: str) -> None:
    assert sanitize_url(url) is None
    assert call("web_fetch", {"url": url}).target is None


def test_delegate_task_keeps_subagent_names() -> None:
    assert call("delegate_task", {"agent": "explorer", "task": "read everything"}).target == "explorer"
    tasks = {"tasks": [{"agent": "a", "task": "x"}, {"agent": "b", "task": "y"}, {"agent": "a", "task": "z"}]}
    assert call("delegate_task", tasks).target == "a, b"


def test_mcp_keeps_server_and_logical_tool_and_nothing_else() -> None:
    act = call(
        "call_mcp_tool",
        {"server": "context7", "tool": "query-docs", "arguments": {"query": "PRIVATE QUESTION"}},
        output={"content": "PRIVATE ANSWER"},
    )
    assert act.to_dict() == {
        "text_offset": 5,
        "tool": "query-docs",
        "status": "success",
        "server": "context7",
    }


def test_mcp_prefers_the_output_names_and_normalizes_them() -> None:
    act = call(
        "call_mcp_tool",
        {"server": "asked", "tool": "asked-tool"},
        output={"server": "ctx", "tool": "mcp:ctx/q"},
    )
    assert (act.server, act.tool) == ("ctx", "q")


def test_mcp_server_is_never_emptied() -> None:
    assert call("call_mcp_tool", {"server": "token-service", "tool": "get"}).server == "token-service"
    redacted = call("call_mcp_tool", {"server": "sk-ant-api03-abcdefghijklmnop", "tool": "get"})
    assert redacted.server == REDACTED
    assert call("call_mcp_tool", {"tool": "get"}).server == "unknown"
    assert call("call_mcp_tool", {"server": "s"}).tool == "call_mcp_tool"


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("", "mcp:ctx/query", ("ctx", "query")),
        ("ctx", "ctx/query", ("ctx", "query")),
        ("mcp:ctx", "q", ("ctx", "q")),
    ],
)
def test_normalize_mcp_tool(server: str, tool: str, expected: tuple[str, str]) -> None:
    assert normalize_mcp_tool(server, tool) == expected


def test_unknown_tools_keep_only_name_and_status() -> None:
    act = call("my_tool", {"path": f"{WS}/a", "secret": "x"}, output={"file_changed": f"{WS}/a"})
    assert act.to_dict() == {"text_offset": 5, "tool": "my_tool", "status": "success"}


def test_users_can_register_rules_for_their_own_tools() -> None:
    rules = {
        **DEFAULT_RULES,
        "open_doc": ToolRule(target=path_target("file"), outcome="file_change", parameter="file"),
    }
    act = retain(
        0,
        "open_doc",
        {"file": f"{WS}/d.md"},
        output={"file_changed": f"{WS}/d.md"},
        workspace=WS,
        rules=rules,
    )
    assert (act.target, act.file_changed) == ("d.md", "d.md")
    rec = tm.TurnRecorder(WS, rules=rules)
    rec.tool_start("1", "open_doc", {"file": f"{WS}/d.md"})
    rec.tool_end("1", output={})
    assert rec.finish().activities[0].target == "d.md"


def test_targets_collapse_whitespace_and_are_bounded_on_a_character_boundary() -> None:
    assert bound_text("  a \n\t b  ") == "a b"
    long = "é" * 300
    bounded = bound_text(long)
    assert len(bounded.encode()) <= 256
    assert bounded.endswith("...")
    assert bounded[:-3] == "é" * 126
    assert call("bash", {"command": "echo " + "x" * 1000}).target is not None
    assert len(call("bash", {"command": "echo " + "ü" * 1000}).target.encode()) <= 256  # type: ignore[union-attr]


def test_control_characters_are_dropped() -> None:
    assert bound_text("ls\x1b[31m\x00 -la") == "ls[31m -la"


@pytest.mark.parametrize("code", [*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), *range(0x7F, 0xA0)])
def test_every_c0_and_c1_control_is_dropped(code: int) -> None:
    assert bound_text(f"ls{chr(code)}[2J -la") == "ls[2J -la"


SECRETS = [
    (
        "openai key",
        "sk-proj-abcDEF1234567890abcDEF1234567890",
        "curl -d x sk-proj-abcDEF1234567890abcDEF1234567890",
    ),
    ("anthropic key", "sk-ant-api03-AbCdEf0123456789-_xyz", "export K=sk-ant-api03-AbCdEf0123456789-_xyz"),
    (
        "github token",
        "ghp_0123456789abcdefABCDEF0123456789abcd",
        "git clone https://ghp_0123456789abcdefABCDEF0123456789abcd@github.com/o/r",
    ),
    (
        "github pat",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "gh auth login --with-token github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    ),
    ("aws access key id", "AKIAIOSFODNN7EXAMPLE", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE"),
    (
        "aws secret env",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY aws s3 ls",
    ),
    (
        "authorization header",
        "abc.def-ghi_jkl",
        "curl -H 'Authorization: Bearer abc.def-ghi_jkl' https://api",
    ),
    ("basic auth header", "dXNlcjpwYXNz", 'curl -H "Authorization: Basic dXNlcjpwYXNz" https://api'),
    ("api key header", "k-123456789", "curl -H 'X-Api-Key: k-123456789' https://api"),
    ("password flag", "hunter2", "mysql --password=hunter2 -u root"),
    ("password flag spaced", "hunter2", "psql --password hunter2"),
    ("token flag", "tok_987654321", "deploy --token tok_987654321 --prod"),
    ("star key env", "abc123secretvalue", "STRIPE_API_KEY=abc123secretvalue npm start"),
    ("db password env", "p@ss:w0rd", "DB_PASSWORD='p@ss:w0rd' ./run"),
    ("url credentials", "s3cr3t", "git push https://bob:s3cr3t@example.com/repo.git"),
    ("query token", "qtoken123", "curl 'https://api.example.com/v1?access_token=qtoken123&x=1'"),
    ("slack", "xoxb-123456789012-abcdefghijklm", "notify xoxb-123456789012-abcdefghijklm"),
    (
        "google api key",
        "AIzaSyA1234567890abcdefghijklmnopqrstuvw",
        "curl https://x?key=AIzaSyA1234567890abcdefghijklmnopqrstuvw",
    ),
    ("stripe live", "sk_live_0123456789abcdefghij", "stripe sk_live_0123456789abcdefghij"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "private key",
        "MIIEowIBAAKCAQEAvsecretbase64",
        "echo '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvsecretbase64\n-----END RSA PRIVATE KEY-----' > k",
    ),
    ("json password", "topsecret", 'curl -d \'{"user":"a","password":"topsecret"}\' https://x'),
    (
        "hugging face",
        "hf_abcdefghijklmnopqrstuvwxyz012345",
        "HF=hf_abcdefghijklmnopqrstuvwxyz012345 python x.py",
    ),
]


@pytest.mark.parametrize(("shape", "secret", "command"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secrets_are_redacted_inside_the_target(shape: str, secret: str, command: str) -> None:
    act = call("bash", {"command": command}, output={"exit_code": 1})
    stored = json.dumps(act.to_dict())
    assert secret not in stored
    assert REDACTED in (act.target or "")
    assert act.failed_command == act.target
    # The rest of the command survives: redaction is not a reason to drop the target.
    kept = [word for word in command.split() if secret not in word and len(word) > 2]
    assert kept and all(word in (act.target or "") for word in kept[:1])


def test_redaction_is_idempotent() -> None:
    once = redact("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuv curl -H 'Authorization: Bearer xyz12345678'")
    assert redact(once) == once


def test_secret_in_url_path_and_file_changed() -> None:
    act = call(
        "edit_file",
        {"path": f"{WS}/keys/ghp_0123456789abcdefABCDEF0123456789abcd.txt"},
        output={"file_changed": f"{WS}/keys/ghp_0123456789abcdefABCDEF0123456789abcd.txt"},
    )
    assert "ghp_0123456789" not in json.dumps(act.to_dict())
    assert act.file_changed == "keys/[REDACTED].txt"
