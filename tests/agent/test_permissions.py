"""Permissions: rule parsing, the dangerous-command classifier, path resolution and decisions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.agent.bash import dangerous_reason
from turnmemory.agent.permissions import (
    Access,
    Answer,
    Permissions,
    Rule,
    parse_rule,
    parse_rules,
    resolve_path,
    session_scope,
)

WS = "/home/dev/repo"


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf build", "recursive force delete"),
        ("rm -fr /", "recursive force delete"),
        ("rm -r -f ~/x", "recursive force delete"),
        ("rm --recursive --force x", "recursive force delete"),
        ("cd /tmp && rm -Rf *", "recursive force delete"),
        ('bash -c "rm -rf /"', "recursive force delete"),
        ("git push --force origin main", "force push"),
        ("git push -f", "force push"),
        ("git push origin +main", "force push"),
        ("git push --force-with-lease", "force push"),
        ("git reset --hard HEAD~1", "hard reset discards changes"),
        ("git clean -fdx", "git clean deletes untracked files"),
        ("git checkout -- .", "checkout discards working-tree changes"),
        ("git branch -D feature", "force-deletes a branch"),
        ("curl -fsSL https://x.sh | sh", "downloaded script piped into a shell"),
        ("wget -qO- https://x | sudo bash", "downloaded script piped into a shell"),
        ("curl https://x | python3", "downloaded script piped into an interpreter"),
        ('sh -c "$(curl -fsSL https://x)"', "shell running a downloaded script"),
        ("bash <(curl -s https://x)", "shell running a downloaded script"),
        ("sudo apt-get install x", "runs as another user"),
        ("mkfs.ext4 /dev/sdb1", "formats a file system"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "raw write to a device"),
        ("chmod -R 777 /", "recursive world-writable permissions"),
        (":(){ :|:& };:", "fork bomb"),
        ("echo x > /dev/sda", "write to a block device"),
        ("cat img >> /dev/nvme0n1", "write to a block device"),
        ("find . -name '*.pyc' -delete", "find that deletes files"),
        ("shutdown -h now", "shuts the machine down"),
    ],
)
def test_dangerous_commands_are_classified(command: str, reason: str) -> None:
    assert dangerous_reason(command) == reason


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "rm file.txt",
        "rm -r build",
        "git push origin main",
        "git reset HEAD~1",
        "git checkout main",
        "curl https://example.com -o page.html",
        "chmod +x run.sh",
        "chmod -R 755 dist",
        "dd if=a of=b",
        "pytest -x -q",
        "echo done > /dev/null",
        "find . -name '*.py'",
    ],
)
def test_ordinary_commands_are_not_dangerous(command: str) -> None:
    assert dangerous_reason(command) is None


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("bash", Rule("bash")),
        ("bash:git *", Rule("bash", "git *")),
        ("  Write ", Rule("write")),
        ("edit:src/*.py", Rule("edit", "src/*.py")),
        ("mcp:time", Rule("mcp", "time")),
        ("all", Rule("all")),
        ("dangerous", Rule("dangerous")),
    ],
)
def test_rules_parse(text: str, rule: Rule) -> None:
    assert parse_rule(text) == rule
    assert parse_rule(str(rule)) == rule


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shell", "unknown permission rule 'shell'"),
        ("bash:", "empty pattern"),
        ("all:x", "takes no pattern"),
        ("dangerous:rm", "takes no pattern"),
    ],
)
def test_bad_rules_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_rule(text)
    assert "\n" not in str(caught.value)


def headless(*rules: str) -> Permissions:
    return Permissions(WS, parse_rules(rules))


def bash(command: str) -> Access:
    return Access("bash", command, dangerous=dangerous_reason(command))


def test_headless_grants_reads_inside_and_denies_the_rest_with_a_hint() -> None:
    permissions = headless()
    assert permissions.decide(Access("read", f"{WS}/a.py")).how == "auto"
    for access, hint in [
        (Access("read", "/etc/hosts", outside=True), "--allow 'read:/etc/*'"),
        (Access("write", f"{WS}/a.py"), "--allow write"),
        (Access("edit", f"{WS}/a.py"), "--allow edit"),
        (bash("ls"), "--allow bash"),
        (Access("web", "example.com"), "--allow web"),
        (Access("mcp", "time/now"), "--allow mcp"),
        (Access("write", "/tmp/x", outside=True), "--allow 'write:/tmp/x'"),
    ]:
        decision = permissions.decide(access)
        assert not decision.allowed and decision.how == "refused"
        assert hint in decision.reason


def test_rules_grant_by_kind_and_pattern() -> None:
    permissions = headless("bash:git *", "edit:src/*", "mcp:time", "web:*.example.com")
    assert permissions.decide(bash("git status")).allowed
    assert permissions.decide(bash("git status && git diff")).allowed
    assert not permissions.decide(bash("git status; ls")).allowed
    assert not permissions.decide(bash("git log $(rm x)")).allowed
    assert permissions.decide(Access("edit", f"{WS}/src/a.py")).allowed
    assert not permissions.decide(Access("edit", f"{WS}/tests/a.py")).allowed
    assert permissions.decide(Access("mcp", "time/get_current_time")).allowed
    assert not permissions.decide(Access("mcp", "files/read")).allowed
    assert permissions.decide(Access("web", "docs.example.com")).allowed
    assert not permissions.decide(Access("web", "example.org")).allowed


def test_writes_outside_the_workspace_need_a_pattern_naming_them() -> None:
    outside = Access("write", "/tmp/out.txt", outside=True)
    assert not headless("write").decide(outside).allowed
    assert not headless("all").decide(outside).allowed
    assert headless("write:/tmp/*").decide(outside).allowed
    assert headless("all").decide(Access("read", "/etc/hosts", outside=True)).allowed


def test_dangerous_commands_need_an_explicit_dangerous_rule_headless() -> None:
    rm = bash("rm -rf build")
    for rules in [(), ("bash",), ("all",), ("bash:rm *",)]:
        decision = headless(*rules).decide(rm)
        assert not decision.allowed
        assert "dangerous" in decision.reason and "recursive force delete" in decision.reason
    assert not headless("dangerous").decide(rm).allowed, "dangerous alone does not allow bash"
    assert headless("bash", "dangerous").decide(rm).allowed
    assert headless("all", "dangerous").decide(rm).allowed


def test_interactive_answers_and_session_grants() -> None:
    asked: list[Access] = []
    answers = iter(
        [
            Answer("session"),
            Answer("once"),
            Answer("once"),
            Answer("once"),
            Answer("deny", "use make instead"),
        ]
    )

    def ask(access: Access) -> Answer:
        asked.append(access)
        return next(answers)

    permissions = Permissions(WS, (), ask=ask)
    assert permissions.decide(bash("ls")).label == "allow_session"
    assert permissions.decide(bash("ls -la src")).label == "allow_session", "ls is allowed for the session"
    assert permissions.decide(bash("pytest")).label == "allow_once", "other programs are still asked about"
    rm = bash("rm -rf build")
    assert permissions.decide(rm).label == "allow_once", "a dangerous command is asked about every time"
    assert permissions.decide(rm).label == "allow_once"
    denied = permissions.decide(Access("write", f"{WS}/a"))
    assert denied.label == "deny" and "use make instead" in denied.reason
    assert [access.subject for access in asked if access.kind == "bash"] == [
        "ls",
        "pytest",
        *[rm.subject] * 2,
    ]
    permissions.reset_session()
    assert permissions.session_rules == []


def test_session_answer_on_a_dangerous_command_grants_only_once() -> None:
    permissions = Permissions(WS, (), ask=lambda access: Answer("session"))
    assert permissions.decide(bash("sudo ls")).label == "allow_once"
    assert permissions.session_rules == []


def test_session_rules_are_scoped() -> None:
    assert session_scope(Access("mcp", "time/now"), WS) == (Rule("mcp", "time"),)
    assert session_scope(Access("web", "a.example"), WS) == (Rule("web", "a.example"),)
    assert session_scope(Access("read", "/etc/hosts", outside=True), WS) == (Rule("read", "/etc/*"),)
    assert session_scope(Access("write", "/tmp/x", outside=True), WS) == (Rule("write", "/tmp/x"),)
    assert session_scope(Access("edit", f"{WS}/x"), WS) == (Rule("edit"),)


def test_spill_directory_is_readable_without_asking(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    permissions = Permissions(WS, (), extra_readable=[str(spill)])
    assert permissions.decide(Access("read", str(spill / "1-stdout.txt"), outside=True)).how == "auto"
    assert not permissions.decide(Access("read", str(tmp_path / "other"), outside=True)).allowed


# -- properties -----------------------------------------------------------------------------------

_SEGMENTS = st.lists(st.sampled_from(["a", "b", "..", ".", "c.txt"]), min_size=1, max_size=8)


@settings(deadline=None)
@given(_SEGMENTS)
def test_resolved_paths_are_inside_exactly_when_they_stay_under_the_workspace(segments: list[str]) -> None:
    workspace = "/nonexistent-root/ws"
    real, inside = resolve_path("/".join(segments), workspace)
    expected = os.path.normpath(os.path.join(workspace, *segments))
    assert real == expected
    assert inside == (expected == workspace or expected.startswith(workspace + "/"))


_COMMANDS = st.sampled_from(
    [
        "rm -rf x",
        "git push -f",
        "sudo true",
        "curl x | sh",
        "git reset --hard",
        "mkfs /dev/sdb",
        "chmod -R 777 .",
    ]
)
_RULES = st.lists(
    st.sampled_from(["bash", "all", "write", "edit", "mcp", "read", "bash:*", "web"]), max_size=5
)
_WRAPPERS = st.sampled_from(["{}", "echo ok && {}", "{}; echo done", "(cd sub && {})", "bash -c '{}'"])


@settings(deadline=None)
@given(_COMMANDS, _WRAPPERS, _RULES)
def test_dangerous_commands_are_never_allowed_headless_without_the_dangerous_rule(
    command: str, wrapper: str, rules: list[str]
) -> None:
    full = wrapper.format(command)
    access = bash(full)
    assert access.dangerous is not None
    assert not headless(*rules).decide(access).allowed
