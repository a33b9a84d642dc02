"""The agent's tools: files, shell, search and web, run directly (no model)."""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools import ToolContext, ToolError, ToolRegistry, builtin_tools
from turnmemory.agent.tools._base import Deadline
from turnmemory.agent.tools.search import MAX_GREP_MATCHES, grep_files
from turnmemory.agent.tools.shell import MAX_STREAM_BYTES
from turnmemory.agent.tools.web import MAX_TEXT_CHARS, fetch_text, html_to_text

REGISTRY = ToolRegistry(builtin_tools(subagent=lambda agent, task: f"{agent} did {task}"))


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(workspace=os.path.realpath(workspace), spill_dir=str(tmp_path / "spill"))


def run(ctx: ToolContext, name: str, **arguments: Any) -> dict[str, Any]:
    return REGISTRY.prepare(name, arguments, ctx).run()


def write(ctx: ToolContext, rel: str, content: str | bytes) -> Path:
    path = Path(ctx.workspace, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# -- read_file ------------------------------------------------------------------------------------


def test_read_file_numbers_lines_and_pages(ctx: ToolContext) -> None:
    write(ctx, "a.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    out = run(ctx, "read_file", path="a.txt", offset=3, limit=2)
    assert out["content"] == "     3\tline 3\n     4\tline 4"
    assert out["total_lines"] == 10
    assert out["truncated"] is True
    assert out["next_offset"] == 5
    assert out["path"] == os.path.join(ctx.workspace, "a.txt")
    whole = run(ctx, "read_file", path="a.txt")
    assert whole["truncated"] is False and whole["lines_read"] == 10


def test_read_file_is_size_limited(ctx: ToolContext) -> None:
    write(ctx, "big.txt", ("x" * 99 + "\n") * 5000)
    out = run(ctx, "read_file", path="big.txt", limit=5000)
    assert len(out["content"].encode()) <= 100_000
    assert out["truncated"] is True
    assert 0 < out["lines_read"] < 5000
    assert out["next_offset"] == out["lines_read"] + 1


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\r\u00e9", max_size=5), max_size=12),
    final_newline=st.booleans(),
    offset=st.integers(1, 14),
    limit=st.integers(1, 14),
)
def test_read_file_pages_like_splitting_the_text(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], final_newline: bool, offset: int, limit: int
) -> None:
    """Any page of any file: the lines a plain split gives, numbered, with the right total and next page."""
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    workspace = tmp_path_factory.mktemp("page")
    (workspace / "f.txt").write_bytes(text.encode())
    ctx = ToolContext(workspace=str(workspace), spill_dir=str(workspace / ".spill"))
    expected = text.encode().split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    if offset > max(len(expected), 1):
        with pytest.raises(ToolError, match=f"offset {offset} is past the end of f.txt"):
            run(ctx, "read_file", path="f.txt", offset=offset, limit=limit)
        return
    out = run(ctx, "read_file", path="f.txt", offset=offset, limit=limit)
    page = expected[offset - 1 : offset - 1 + limit]
    assert out["content"] == "\n".join(
        f"{offset + i:6}\t{line.decode().rstrip(chr(13))}" for i, line in enumerate(page)
    )
    assert out["total_lines"] == len(expected)
    assert out["truncated"] == (offset - 1 + limit < len(expected))
    assert out.get("next_offset") == (offset + limit if out["truncated"] else None)


def test_read_file_refuses_binary_and_reports_missing_and_directories(ctx: ToolContext) -> None:
    write(ctx, "blob.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(ctx, "dir/x.txt", "x")
    with pytest.raises(ToolError, match=r"blob\.bin is a binary file"):
        run(ctx, "read_file", path="blob.bin")
    with pytest.raises(ToolError, match=r"file not found: nope\.txt"):
        run(ctx, "read_file", path="nope.txt")
    with pytest.raises(ToolError, match="is a directory"):
        run(ctx, "read_file", path="dir")
    with pytest.raises(ToolError, match="past the end"):
        run(ctx, "read_file", path="dir/x.txt", offset=5)
    with pytest.raises(ToolError, match="offset must be at least 1"):
        run(ctx, "read_file", path="dir/x.txt", offset=0)


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_paths_escaping_the_workspace_are_outside(ctx: ToolContext, tmp_path: Path, kind: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    raw = {"dotdot": "../secret.txt", "absolute": str(secret), "symlink": "link/secret.txt"}[kind]
    if kind == "symlink":
        os.symlink(tmp_path, Path(ctx.workspace, "link"))
    for name, arguments in [
        ("read_file", {"path": raw}),
        ("write_file", {"path": raw, "content": "x"}),
        ("edit_file", {"path": raw, "oldString": "outside", "newString": "in"}),
    ]:
        action = REGISTRY.prepare(name, arguments, ctx)
        assert action.access is not None
        assert action.access.outside is True
        assert action.access.subject == str(secret)


def test_symlinks_inside_the_workspace_stay_inside(ctx: ToolContext) -> None:
    write(ctx, "real/a.txt", "a")
    os.symlink(Path(ctx.workspace, "real"), Path(ctx.workspace, "alias"))
    action = REGISTRY.prepare("read_file", {"path": "alias/a.txt"}, ctx)
    assert action.access is not None and action.access.outside is False
    assert action.access.subject == os.path.join(ctx.workspace, "real", "a.txt")


# -- write_file / edit_file -----------------------------------------------------------------------


def test_write_file_reports_file_changed_only_when_content_changes(ctx: ToolContext) -> None:
    target = os.path.join(ctx.workspace, "sub", "new.txt")
    action = REGISTRY.prepare("write_file", {"path": "sub/new.txt", "content": "hello\n"}, ctx)
    assert action.diff is not None and "+hello" in action.diff and "b/sub/new.txt" in action.diff
    first = action.run()
    assert first["file_changed"] == target and first["created"] is True
    again = run(ctx, "write_file", path="sub/new.txt", content="hello\n")
    assert "file_changed" not in again and again["created"] is False
    changed = run(ctx, "write_file", path="sub/new.txt", content="bye\n")
    assert changed["file_changed"] == target
    assert Path(target).read_text() == "bye\n"


def test_edit_file_replaces_and_explains_failures(ctx: ToolContext) -> None:
    path = write(ctx, "m.py", "a = 1\nb = 1\nc = 2\n")
    with pytest.raises(ToolError, match=r"oldString not found in m\.py"):
        REGISTRY.prepare("edit_file", {"path": "m.py", "oldString": "zzz", "newString": "y"}, ctx)
    with pytest.raises(ToolError, match=r"occurs 2 times in m\.py"):
        REGISTRY.prepare("edit_file", {"path": "m.py", "oldString": "= 1", "newString": "= 3"}, ctx)
    with pytest.raises(ToolError, match="identical"):
        REGISTRY.prepare("edit_file", {"path": "m.py", "oldString": "a", "newString": "a"}, ctx)
    with pytest.raises(ToolError, match="file not found"):
        REGISTRY.prepare("edit_file", {"path": "none.py", "oldString": "a", "newString": "b"}, ctx)
    action = REGISTRY.prepare("edit_file", {"path": "m.py", "oldString": "c = 2", "newString": "c = 20"}, ctx)
    assert action.diff is not None and "-c = 2\n+c = 20\n" in action.diff
    out = action.run()
    assert out == {"path": str(path), "replacements": 1, "file_changed": str(path)}
    out = run(ctx, "edit_file", path="m.py", oldString="= 1", newString="= 5", replaceAll=True)
    assert out["replacements"] == 2
    assert path.read_text() == "a = 5\nb = 5\nc = 20\n"


def test_edit_file_refuses_when_the_file_changed_after_preparing(ctx: ToolContext) -> None:
    path = write(ctx, "m.py", "x = 1\n")
    action = REGISTRY.prepare("edit_file", {"path": "m.py", "oldString": "x = 1", "newString": "x = 2"}, ctx)
    path.write_text("x = 1\ny = 0\n")
    with pytest.raises(ToolError, match="changed since the edit was prepared"):
        action.run()
    assert path.read_text() == "x = 1\ny = 0\n"


def test_edit_file_refuses_binary_files(ctx: ToolContext) -> None:
    write(ctx, "b.bin", b"ab\x00cd")
    with pytest.raises(ToolError, match="binary"):
        REGISTRY.prepare("edit_file", {"path": "b.bin", "oldString": "ab", "newString": "x"}, ctx)


# -- bash -----------------------------------------------------------------------------------------


def test_bash_reports_exit_code_and_failed_command(ctx: ToolContext) -> None:
    ok = run(ctx, "bash", command="echo hi; pwd")
    assert ok["exit_code"] == 0 and "failed_command" not in ok
    assert ok["stdout"] == f"hi\n{ctx.workspace}\n"
    failed = run(ctx, "bash", command="echo oops >&2; exit 3")
    assert failed["exit_code"] == 3
    assert failed["failed_command"] == "echo oops >&2; exit 3"
    assert failed["stderr"] == "oops\n"
    assert not os.listdir(ctx.spill_dir), "small outputs leave no spill files"


def test_bash_truncates_huge_output_and_spills_the_full_text(ctx: ToolContext) -> None:
    out = run(ctx, "bash", command="seq 1 200000")
    assert out["truncated"] is True
    spilled = Path(out["stdout_file"])
    assert spilled.parent == Path(ctx.spill_dir)
    assert spilled.read_text() == "".join(f"{n}\n" for n in range(1, 200001))
    assert len(out["stdout"].encode()) < MAX_STREAM_BYTES + 200
    assert out["stdout"].startswith("1\n2\n3\n") and out["stdout"].endswith("199999\n200000\n")
    assert str(spilled) in out["stdout"]


def test_bash_timeout_is_an_error_and_kills_the_process_group(ctx: ToolContext) -> None:
    pid_file = Path(ctx.workspace, "child.pid")
    start = time.monotonic()
    with pytest.raises(ToolError, match="timed out after 1 s"):
        run(ctx, "bash", command=f"sleep 30 & echo $! > {pid_file}; sleep 30", timeout=1)
    assert time.monotonic() - start < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the background child of the timed-out command still runs"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_bash_rejects_empty_commands_and_bad_timeouts(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="empty"):
        REGISTRY.prepare("bash", {"command": "  "}, ctx)
    with pytest.raises(ToolError, match="timeout must be between 1 and 600"):
        REGISTRY.prepare("bash", {"command": "true", "timeout": 0}, ctx)


def test_bash_marks_dangerous_commands(ctx: ToolContext) -> None:
    action = REGISTRY.prepare("bash", {"command": "rm -rf build"}, ctx)
    assert action.access is not None and action.access.dangerous == "recursive force delete"
    action = REGISTRY.prepare("bash", {"command": "ls"}, ctx)
    assert action.access is not None and action.access.dangerous is None


# -- glob / grep ----------------------------------------------------------------------------------


def _grep(pattern: str, root: str, include: str | None, *, ripgrep: str | None) -> list[tuple[str, int, str]]:
    return grep_files(pattern, root, include, ripgrep=ripgrep, deadline=Deadline(30)).matches


def _tree(ctx: ToolContext) -> None:
    write(ctx, ".gitignore", "build/\n*.log\n!keep.log\n")
    write(ctx, "src/app.py", "def main():\n    return 'needle'\n")
    write(ctx, "src/util.py", "NEEDLE = 1\n")
    write(ctx, "src/notes.txt", "needle in text\n")
    write(ctx, "build/out.py", "needle built\n")
    write(ctx, "debug.log", "needle logged\n")
    write(ctx, "keep.log", "needle kept\n")
    write(ctx, "pkg/.gitignore", "generated.py\n")
    write(ctx, "pkg/generated.py", "needle generated\n")
    write(ctx, "pkg/real.py", "needle real\n")


def test_glob_respects_gitignore_without_git(ctx: ToolContext) -> None:
    _tree(ctx)
    out = run(ctx, "glob", pattern="**/*.py")
    assert out["files"] == ["pkg/real.py", "src/app.py", "src/util.py"]
    assert run(ctx, "glob", pattern="*.log")["files"] == ["keep.log"]
    assert run(ctx, "glob", pattern="*.py", path="src")["files"] == ["src/app.py", "src/util.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_glob_respects_gitignore_in_a_git_repository(ctx: ToolContext) -> None:
    _tree(ctx)
    subprocess.run(["git", "init", "-q", ctx.workspace], check=True)
    subprocess.run(["git", "-C", ctx.workspace, "add", "src/app.py"], check=True)
    write(ctx, "untracked.py", "x = 1\n")
    out = run(ctx, "glob", pattern="**/*.py")
    assert out["files"] == ["pkg/real.py", "src/app.py", "src/util.py", "untracked.py"]
    os.unlink(os.path.join(ctx.workspace, "src/app.py"))
    assert "src/app.py" not in run(ctx, "glob", pattern="**/*.py")["files"], "deleted files are not listed"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize(
    "ripgrep",
    [
        pytest.param(
            shutil.which("rg"), id="rg", marks=pytest.mark.skipif(not shutil.which("rg"), reason="no rg")
        ),
        pytest.param(None, id="python"),
    ],
)
def test_an_ignored_directory_asked_for_by_name_is_searched(ctx: ToolContext, ripgrep: str | None) -> None:
    write(ctx, ".gitignore", "vendor/\n")
    write(ctx, "vendor/lib.py", "needle = 1\n")
    write(ctx, "vendor/.gitignore", "*.tmp\n")
    write(ctx, "vendor/x.tmp", "needle\n")
    write(ctx, "app.py", "needle = 2\n")
    subprocess.run(["git", "init", "-q", ctx.workspace], check=True)
    everywhere = _grep("needle", ctx.workspace, None, ripgrep=ripgrep)
    assert [os.path.relpath(path, ctx.workspace) for path, _, _ in everywhere] == ["app.py"]
    vendor = _grep("needle", os.path.join(ctx.workspace, "vendor"), None, ripgrep=ripgrep)
    assert [os.path.relpath(path, ctx.workspace) for path, _, _ in vendor] == ["vendor/lib.py"]
    assert run(ctx, "glob", pattern="*", path="vendor")["files"] == ["vendor/.gitignore", "vendor/lib.py"]


def test_grep_python_fallback_respects_gitignore_and_include(ctx: ToolContext) -> None:
    _tree(ctx)
    found = _grep("needle", ctx.workspace, None, ripgrep=None)
    assert [(os.path.relpath(path, ctx.workspace), line) for path, line, _ in found] == [
        ("keep.log", 1),
        ("pkg/real.py", 1),
        ("src/app.py", 2),
        ("src/notes.txt", 1),
    ]
    only_py = _grep("(?i)needle", ctx.workspace, "*.py", ripgrep=None)
    assert [os.path.relpath(path, ctx.workspace) for path, _, _ in only_py] == [
        "pkg/real.py",
        "src/app.py",
        "src/util.py",
    ]
    with pytest.raises(ToolError, match="invalid regular expression"):
        _grep("(", ctx.workspace, None, ripgrep=None)


def test_grep_skips_binary_files_and_limits_matches(ctx: ToolContext) -> None:
    write(ctx, "bin.dat", b"needle\x00needle\n")
    write(ctx, "many.txt", "needle\n" * (MAX_GREP_MATCHES + 50))
    found = _grep("needle", ctx.workspace, None, ripgrep=None)
    assert {os.path.basename(path) for path, _, _ in found} == {"many.txt"}
    assert len(found) == MAX_GREP_MATCHES + 1
    out = run(ctx, "grep", pattern="needle")
    assert out["count"] == MAX_GREP_MATCHES and out["truncated"] is True
    assert out["matches"].splitlines()[0] == "many.txt:1:needle"


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_ripgrep_and_the_fallback_agree(ctx: ToolContext) -> None:
    _tree(ctx)
    rg = shutil.which("rg")
    for pattern, include in [("needle", None), ("(?i)needle", "*.py"), ("return", "src/**")]:
        assert _grep(pattern, ctx.workspace, include, ripgrep=rg) == _grep(
            pattern, ctx.workspace, include, ripgrep=None
        )


# -- web_fetch ------------------------------------------------------------------------------------

PAGES: dict[str, tuple[int, str, bytes]] = {
    "/page": (
        200,
        "text/html; charset=utf-8",
        b"<html><head><title>T</title><style>.x{}</style></head><body><h1>Head</h1>"
        b"<p>Hello <b>world</b></p><script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>",
    ),
    "/plain": (200, "text/plain", b"just text"),
    "/big": (200, "text/plain", b"y" * (MAX_TEXT_CHARS + 10)),
    "/image": (200, "image/png", b"\x89PNG"),
    "/missing": (404, "text/plain", b"no"),
}


def _refuse(access: Access) -> None:
    raise AssertionError(f"unexpected access {access}")


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/redirect-ftp":
            self.send_response(302)
            self.send_header("Location", "ftp://files.example.invalid/x")
            self.end_headers()
            return
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/plain")
            self.end_headers()
            return
        status, kind, body = PAGES[self.path]
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_web_fetch_converts_html_to_text(ctx: ToolContext, web: str) -> None:
    action = REGISTRY.prepare("web_fetch", {"url": f"{web}/page"}, ctx)
    assert action.access is not None and (action.access.kind, action.access.subject) == ("web", "127.0.0.1")
    out = action.run()
    assert out["status_code"] == 200 and out["content_type"] == "text/html"
    assert out["content"] == "T\n\nHead\n\nHello world\n\n- one\n\n- two"
    assert "alert" not in out["content"]


def test_web_fetch_limits_redirects_errors_and_types(ctx: ToolContext, web: str) -> None:
    assert fetch_text(f"{web}/redirect", authorize=_refuse)["content"] == "just text"
    big = fetch_text(f"{web}/big", authorize=_refuse)
    assert big["truncated"] is True and len(big["content"]) == MAX_TEXT_CHARS
    with pytest.raises(ToolError, match="HTTP 404"):
        fetch_text(f"{web}/missing", authorize=_refuse)
    with pytest.raises(ToolError, match="image/png, not text"):
        fetch_text(f"{web}/image", authorize=_refuse)
    with pytest.raises(ToolError, match="refused redirect to a ftp: URL"):
        fetch_text(f"{web}/redirect-ftp", authorize=_refuse)
    with pytest.raises(ToolError, match="http:// or https://"):
        REGISTRY.prepare("web_fetch", {"url": "file:///etc/passwd"}, ctx)


def test_web_fetch_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with pytest.raises(ToolError, match=r"timed out after 0\.3 s"):
            fetch_text(f"http://127.0.0.1:{port}/slow", authorize=_refuse, timeout=0.3)


def test_html_to_text_keeps_preformatted_text() -> None:
    assert html_to_text("<p>a   b</p><pre>x  y\n  z</pre>") == "a b\n\nx  y\nz"


# -- delegate_task and the registry ---------------------------------------------------------------


def test_delegate_task_returns_the_subagent_answer(ctx: ToolContext) -> None:
    action = REGISTRY.prepare("delegate_task", {"agent": "finder", "task": "find x"}, ctx)
    assert action.access is None
    assert action.run() == {"agent": "finder", "result": "finder did find x"}


def test_registry_refuses_unknown_tools(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="unknown tool 'nope'"):
        REGISTRY.prepare("nope", {}, ctx)
    assert REGISTRY.names == tuple(sorted(REGISTRY.names))
