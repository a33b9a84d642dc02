"""The file and search tools against a hostile model and a hostile repository.

The model (the fake provider server's script) is the attacker: it calls the tools with whatever
arguments reach a secret outside the workspace, probe a file before permission, or hang the agent.
The repository is hostile too: committed symlinks to files and directories outside, FIFOs, sockets,
links to devices, a 2 GiB one-line file. Each class is attacked through ``turnmemory run`` and, with
more instances, in process. Nothing outside the workspace may be read, written or returned; nothing
may hang; the model gets one line saying why.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import stat
import subprocess
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import Run, body_text, leaked_into, tool_results

from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer
from turnmemory.agent.tools import ToolContext, ToolError, ToolRegistry, builtin_tools, files, search
from turnmemory.agent.tools._base import Deadline, iter_lines
from turnmemory.agent.tools._listing import list_files
from turnmemory.agent.tools.search import MAX_SEARCH_FILE_BYTES, MAX_SEARCH_LINE_BYTES, grep_files
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

SECRET = "OUTSIDE-SECRET-c4a7"
"""What the files outside the workspace hold; it must never reach the model, the database or the output."""
OUTSIDE_NAME = "outside-only-name-9d2.txt"
"""A file name that exists only outside the workspace."""
HUGE = 2 * 1024**3
RG = shutil.which("rg")
SEARCHERS = [
    pytest.param("rg", marks=pytest.mark.skipif(RG is None, reason="ripgrep is not installed")),
    "python",
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace with secrets in it (the user's home, another project)."""
    path = tmp_path / "outside"
    (path / "dir").mkdir(parents=True)
    (path / "id_rsa").write_text(f"-----BEGIN KEY-----\n{SECRET}\nx\nx\nx\nx\n")
    (path / "dir" / OUTSIDE_NAME).write_text(f"{SECRET}\n")
    (path / "target.txt").write_text(f"header\n{SECRET}\nx\nx\nx\nx\n")
    return path


def _hostile_repo(workspace: Path, outside: Path) -> None:
    """A repository with committed links out: to a key file (absolute) and to a directory (relative)."""
    (workspace / "README.md").write_text("Nothing to see here.\n")
    os.symlink(outside / "id_rsa", workspace / "key")
    os.symlink(os.path.join("..", "outside", "dir"), workspace / "linked")
    os.symlink("/dev/zero", workspace / ".gitignore")  # read by a searcher that follows it: endless zeros
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        subprocess.run(["git", "-C", str(workspace), "add", "-A"], check=True)


def _path_env(tmp_path: Path, searcher: str) -> dict[str, str]:
    """The environment that makes the agent's grep use ``searcher`` (without rg on PATH: the Python scan)."""
    if searcher == "rg":
        return {}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    git = shutil.which("git")
    if git and not (bin_dir / "git").exists():
        os.symlink(git, bin_dir / "git")
    return {"PATH": str(bin_dir)}


def _results(server: FakeProviderServer, index: int = 1) -> list[Any]:
    return [json.loads(result) for result in tool_results(server.requests[index].body)]


def _one_line_refusals(results: list[Any], prefix: str) -> list[str]:
    """The error of every result, each checked to be one line starting with ``prefix``."""
    errors = []
    for result in results:
        assert set(result) == {"error"}, result
        error: str = result["error"]
        assert error.startswith(prefix) and "\n" not in error, error
        errors.append(error)
    return errors


def _run(cli: Run, server: FakeProviderServer, calls: list[ToolCall], *allow: str, **options: Any) -> Any:
    server.push(Reply(text="Working.", tool_calls=calls), Reply(text="Done."))
    url = server.base_url("openai_chat")
    rules = [arg for rule in allow for arg in ("--allow", rule)]
    return cli("run", "--provider", "openai_chat", "--base-url", url, *rules, "go", **options)


# -- 2. grep and glob never follow links out of the workspace ------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("searcher", SEARCHERS)
def test_search_tools_do_not_follow_links_out_through_the_cli(
    cli: Run,
    server: FakeProviderServer,
    workspace: Path,
    outside: Path,
    tmp_path: Path,
    data_dir: Path,
    searcher: str,
) -> None:
    _hostile_repo(workspace, outside)
    walked = [
        ToolCall("grep", {"pattern": "SECRET"}),
        ToolCall("grep", {"pattern": ".", "include": "*"}),
        ToolCall("glob", {"pattern": "**"}),
    ]
    refused = [
        ToolCall("grep", {"pattern": "SECRET", "path": "key"}),
        ToolCall("grep", {"pattern": "SECRET", "path": "linked"}),
        ToolCall("grep", {"pattern": "SECRET", "path": "linked/."}),
        ToolCall("grep", {"pattern": "SECRET", "path": "../outside"}),
        ToolCall("grep", {"pattern": "SECRET", "path": str(outside)}),
        ToolCall("grep", {"pattern": "SECRET", "path": "~"}),
        ToolCall("glob", {"pattern": "**", "path": "linked"}),
        ToolCall("glob", {"pattern": "*", "path": "../outside"}),
        ToolCall("read_file", {"path": "key"}),
    ]
    done = _run(cli, server, walked + refused, extra_env=_path_env(tmp_path, searcher))
    results = _results(server)
    secret_grep, everything, listing = results[: len(walked)]
    assert secret_grep["count"] == 0 and secret_grep["matches"] == ""
    assert everything["matches"] == "README.md:1:Nothing to see here."
    assert (
        set(listing["files"]) <= {".gitignore", "README.md", "key", "linked"}
        and "README.md" in listing["files"]
    )
    _one_line_refusals(results[len(walked) :], "permission denied: not allowed without asking: read (outside")
    for marker in (SECRET, OUTSIDE_NAME):
        assert leaked_into(marker, server, data_dir, done.stdout, done.stderr) == []


@pytest.mark.parametrize("searcher", SEARCHERS)
def test_a_granted_read_outside_does_not_make_the_workspace_search_follow_links(
    make_agent: Callable[..., Agent],
    server: FakeProviderServer,
    workspace: Path,
    outside: Path,
    searcher: str,
) -> None:
    _hostile_repo(workspace, outside)
    (workspace / "src").mkdir()
    os.symlink(workspace / "README.md", workspace / "src" / "inside-link.md")
    os.symlink(outside / "dir" / OUTSIDE_NAME, workspace / "src" / "deep-link.txt")
    found = grep_files(
        SECRET, str(workspace), None, ripgrep=RG if searcher == "rg" else None, deadline=Deadline(30)
    )
    assert found.matches == [] and not found.timed_out
    anything = grep_files(
        ".", str(workspace), None, ripgrep=RG if searcher == "rg" else None, deadline=Deadline(30)
    )
    assert [os.path.relpath(path, workspace) for path, _, _ in anything.matches] == ["README.md"]
    server.push(
        Reply(
            text="Searching.",
            tool_calls=[ToolCall("grep", {"pattern": "SECRET"}), ToolCall("glob", {"pattern": "**"})],
        ),
        Reply(text="Done."),
    )
    agent = make_agent("openai_chat", allow=("read",))
    agent.turn("search")
    grep, glob = _results(server)
    assert grep["count"] == 0
    assert OUTSIDE_NAME not in json.dumps(glob)


def test_a_stale_index_cannot_list_files_through_a_symlinked_directory(
    workspace: Path, outside: Path
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (workspace / "sub").mkdir()
    (workspace / "sub" / OUTSIDE_NAME).write_text("tracked\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "add", "-A"], check=True)
    shutil.rmtree(workspace / "sub")
    os.symlink(outside / "dir", workspace / "sub")  # the index still lists sub/<name>, now reached via a link
    assert f"sub/{OUTSIDE_NAME}" not in list_files(str(workspace), Deadline(30))


def test_git_listing_never_runs_the_repository_fsmonitor(workspace: Path, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pwned = tmp_path / "pwned"
    (workspace / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(workspace), "config", "core.fsmonitor", f"touch {pwned}; false"], check=True
    )
    assert list_files(str(workspace), Deadline(30)) == ["a.txt"]
    assert not pwned.exists()


@pytest.mark.timeout(30)
def test_a_fifo_gitignore_does_not_hang_the_listing(workspace: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "b.txt").write_text("b\n")
    (workspace / "sub" / "skip.log").write_text("ignored\n")
    (workspace / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    os.mkfifo(workspace / "sub" / ".gitignore")  # git blocks opening it: the walker lists instead
    assert list_files(str(workspace), Deadline(4)) == [".gitignore", "sub/.gitignore", "sub/b.txt"]


_NAMES = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.lists(
        st.tuples(
            st.sampled_from(["file", "dir", "link-in", "link-out", "link-dir-out", "link-dir-in"]),
            _NAMES,
            _NAMES,
        ),
        max_size=10,
    ),
    searcher=st.sampled_from(["rg", "python"] if RG else ["python"]),
)
def test_no_layout_of_links_leads_a_search_outside(
    tmp_path_factory: pytest.TempPathFactory, layout: list[tuple[str, str, str]], searcher: str
) -> None:
    base = tmp_path_factory.mktemp("layout")
    workspace, outside = base / "ws", base / "out"
    (outside / "d").mkdir(parents=True)
    (outside / "f").write_text(f"{SECRET}\n")
    (outside / "d" / "f").write_text(f"{SECRET}\n")
    workspace.mkdir()
    for kind, parent, name in layout:
        where = workspace / parent
        where.mkdir(exist_ok=True)
        entry = where / name
        if os.path.lexists(entry):
            continue
        if kind == "file":
            entry.write_text(f"inside {name}\n")
        elif kind == "dir":
            entry.mkdir()
            (entry / "f").write_text("inside\n")
        elif kind == "link-in":
            os.symlink(workspace, entry)
        elif kind == "link-out":
            os.symlink(outside / "f", entry)
        else:
            os.symlink(outside / "d" if kind == "link-dir-out" else where, entry)
    found = grep_files(
        ".", str(workspace), None, ripgrep=RG if searcher == "rg" else None, deadline=Deadline(30)
    )
    for path, _, text in found.matches:
        assert SECRET not in text
        assert not os.path.islink(path) and os.path.realpath(path) == path
        assert path.startswith(str(workspace) + os.sep)


# -- 3. writes and edits outside decide permission before reading anything ------------------------------


@pytest.mark.timeout(90)
def test_writes_and_edits_outside_cannot_probe_before_permission_through_the_cli(
    cli: Run, server: FakeProviderServer, workspace: Path, outside: Path, data_dir: Path
) -> None:
    _hostile_repo(workspace, outside)
    target = outside / "target.txt"
    before = {path: path.read_bytes() for path in outside.rglob("*") if path.is_file()}
    calls = [
        ToolCall("edit_file", {"path": str(target), "oldString": "absent text", "newString": "y"}),
        ToolCall("edit_file", {"path": str(target), "oldString": "x", "newString": "y"}),
        ToolCall("edit_file", {"path": "../outside/target.txt", "oldString": "header", "newString": "y"}),
        ToolCall("edit_file", {"path": "key", "oldString": "x", "newString": "y", "replaceAll": True}),
        ToolCall("edit_file", {"path": f"linked/{OUTSIDE_NAME}", "oldString": "x", "newString": "y"}),
        ToolCall("edit_file", {"path": "/dev/zero", "oldString": "a", "newString": "b"}),
        ToolCall("edit_file", {"path": str(outside / "missing.txt"), "oldString": "a", "newString": "b"}),
        ToolCall("edit_file", {"path": str(outside / "dir"), "oldString": "a", "newString": "b"}),
        ToolCall("write_file", {"path": str(target), "content": "pwned\n"}),
        ToolCall("write_file", {"path": "linked/new.txt", "content": "pwned\n"}),
        ToolCall("write_file", {"path": str(outside / "dir"), "content": "pwned\n"}),
    ]
    done = _run(cli, server, calls, "edit", "write")
    errors = _one_line_refusals(_results(server), "permission denied: not allowed without asking: ")
    for error in errors:
        assert not any(word in error for word in ("not found", "occurs", "directory", "binary", "device")), (
            error
        )
    assert {path: path.read_bytes() for path in outside.rglob("*") if path.is_file()} == before
    assert not (outside / "dir" / "new.txt").exists()
    assert leaked_into(SECRET, server, data_dir, done.stdout, done.stderr) == []


def test_the_diff_of_an_outside_file_is_made_only_after_the_grant(
    make_agent: Callable[..., Agent],
    server: FakeProviderServer,
    workspace: Path,
    outside: Path,
    data_dir: Path,
) -> None:
    (workspace / "inside.txt").write_text("old line\n")
    target = outside / "target.txt"
    asked: list[tuple[str, int]] = []
    answers = iter(["deny", "deny", "deny", "once", "once"])

    def ask(access: Access) -> Answer:
        asked.append((access.subject, len(agent.view.diffs)))  # type: ignore[attr-defined]
        return Answer(next(answers), "no")  # type: ignore[arg-type]

    calls = [
        ToolCall("edit_file", {"path": str(target), "oldString": "absent", "newString": "y"}),
        ToolCall("edit_file", {"path": str(target), "oldString": "x", "newString": "y"}),
        ToolCall("write_file", {"path": str(target), "content": "new\n"}),
        ToolCall("edit_file", {"path": "inside.txt", "oldString": "old", "newString": "new"}),
        ToolCall("edit_file", {"path": str(target), "oldString": "header", "newString": "HEADER"}),
    ]
    server.push(Reply(text="Editing.", tool_calls=calls), Reply(text="Done."))
    agent = make_agent("openai_chat", ask=ask)
    agent.turn("edit")
    inside = str(workspace / "inside.txt")
    # denied outside calls were asked about with no diff shown; the inside edit's diff came before its prompt
    assert asked == [(str(target), 0), (str(target), 0), (str(target), 0), (inside, 1), (str(target), 1)]
    errors = [result["error"] for result in _results(server)[:3]]
    assert errors == [
        f"permission denied: the user denied edit (outside the workspace): {target}: no"
    ] * 2 + [f"permission denied: the user denied write (outside the workspace): {target}: no"]
    assert len(agent.view.diffs) == 2 and "-header\n+HEADER\n" in agent.view.diffs[1]  # type: ignore[attr-defined]
    assert target.read_text().startswith("HEADER\n")
    stored = agent.store.load(agent.session_id)
    assert stored.messages[-1].content == "Editing.Done."


@pytest.mark.timeout(60)
def test_a_granted_edit_of_a_device_or_fifo_is_refused_without_reading(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    calls = [
        ToolCall("edit_file", {"path": "/dev/zero", "oldString": "a", "newString": "b"}),
        ToolCall("edit_file", {"path": "/dev/urandom", "oldString": "a", "newString": "b"}),
        ToolCall("write_file", {"path": "/dev/zero", "content": "x"}),
        ToolCall("edit_file", {"path": "pipe", "oldString": "a", "newString": "b"}),
        ToolCall("write_file", {"path": "pipe", "content": "x"}),
    ]
    server.push(Reply(text="Editing.", tool_calls=calls), Reply(text="Done."))
    agent = make_agent("openai_chat", allow=("edit:/dev/*", "write:/dev/*", "edit", "write"))
    agent.turn("edit")
    errors = [result["error"] for result in _results(server)]
    assert errors == [
        "/dev/zero is a character device, not a regular file: refused",
        "/dev/urandom is a character device, not a regular file: refused",
        "/dev/zero is a character device, not a regular file: refused",
        "pipe is a FIFO (named pipe), not a regular file: refused",
        "pipe is a FIFO (named pipe), not a regular file: refused",
    ]
    assert stat.S_ISFIFO(os.lstat(workspace / "pipe").st_mode)


# -- 6. files that are not files ----------------------------------------------------------------------


@pytest.fixture
def strange_files(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace with FIFOs (one of them a ``.gitignore``), a socket, links to devices (one of them an
    ``.ignore``), a 2 GiB one-line (sparse) file and a text file."""
    os.mkfifo(workspace / "pipe")
    monkeypatch.chdir(workspace)  # a socket path must be short: bind it relative to the workspace
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("sock")
    os.symlink("/dev/zero", workspace / "zero")
    os.symlink("/dev/urandom", workspace / "random")
    with open(workspace / "huge.log", "wb") as handle:
        handle.write(b"x" * 10_000)
        handle.truncate(HUGE)
    (workspace / "notes.txt").write_text("x marks the spot\n")
    (workspace / "sub").mkdir()
    os.mkfifo(workspace / "sub" / ".gitignore")  # ignore files a searcher would read: hang, or flood
    os.mkfifo(workspace / ".rgignore")
    os.symlink("/dev/zero", workspace / ".ignore")
    try:
        yield workspace
    finally:
        listener.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("searcher", SEARCHERS)
def test_fifos_sockets_devices_and_huge_lines_through_the_cli(
    cli: Run, server: FakeProviderServer, strange_files: Path, tmp_path: Path, data_dir: Path, searcher: str
) -> None:
    special = {
        "pipe": "a FIFO (named pipe)",
        "sock": "a socket",
        "zero": "a character device",
        "random": "a character device",
    }
    shown = {"pipe": "pipe", "sock": "sock", "zero": "/dev/zero", "random": "/dev/urandom"}
    calls = [ToolCall("read_file", {"path": name}) for name in special]
    calls += [ToolCall("grep", {"pattern": "x", "path": name}) for name in special]
    calls += [ToolCall("edit_file", {"path": name, "oldString": "a", "newString": "b"}) for name in special]
    calls += [ToolCall("write_file", {"path": name, "content": "b"}) for name in ("pipe", "sock")]
    calls += [
        ToolCall("read_file", {"path": "huge.log", "limit": 1}),
        ToolCall("grep", {"pattern": "x"}),
        ToolCall("grep", {"pattern": "x", "path": "huge.log"}),
        ToolCall("glob", {"pattern": "**"}),
    ]
    done = _run(
        cli,
        server,
        calls,
        "read:/dev/*",
        "edit:/dev/*",
        "edit",
        "write",
        extra_env=_path_env(tmp_path, searcher),
    )
    results = _results(server)
    refusals = [result["error"] for result in results[:14]]
    expected = [f"{shown[name]} is {kind}, not a regular file: refused" for name, kind in special.items()]
    assert refusals == expected * 3 + expected[:2]
    huge, grep_all, grep_huge, listing = results[14:]
    assert huge["content"] == "     1\t" + "x" * 2000 + " [line truncated]"
    assert huge["truncated"] is True and huge["next_offset"] == 2 and "total_lines" not in huge
    assert grep_all["matches"] == "notes.txt:1:x marks the spot"
    assert grep_huge["error"] == (
        f"{strange_files / 'huge.log'} is {HUGE} bytes, over the {MAX_SEARCH_FILE_BYTES} bytes grep searches: "
        "read it in parts with read_file offset and limit"
    )
    assert {"huge.log", "notes.txt"} <= set(listing["files"])
    assert stat.S_ISFIFO(os.lstat(strange_files / "pipe").st_mode)
    assert not any("\\u0000" in body_text(request.body) for request in server.requests), "device bytes leaked"
    assert "\0" not in done.stdout


def test_reading_and_searching_a_huge_line_takes_bounded_memory(strange_files: Path) -> None:
    ctx = ToolContext(workspace=str(strange_files), spill_dir=str(strange_files / ".spill"))
    registry = ToolRegistry(builtin_tools())
    with open(strange_files / "long.txt", "wb") as handle:  # one line, just under the search size limit
        handle.write(b"y" * 10_000 + b"needle")
        handle.truncate(90 * 1024 * 1024)
    tracemalloc.start()
    try:
        first = registry.prepare("read_file", {"path": "huge.log", "limit": 1}, ctx).run()
        paged = registry.prepare("read_file", {"path": "long.txt", "offset": 1, "limit": 3}, ctx).run()
        found = grep_files(
            "needle", str(strange_files / "long.txt"), None, ripgrep=None, deadline=Deadline(60)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first["lines_read"] == 1 and paged["total_lines"] == 1
    assert [number for _, number, _ in found.matches] == [1]
    assert peak < 4 * MAX_SEARCH_LINE_BYTES + 16 * 1024 * 1024


# -- deadlines ---------------------------------------------------------------------------------------


class _Countdown(Deadline):
    """A deadline that passes after a number of checks: deterministic, no clock."""

    def __init__(self, checks: int) -> None:
        super().__init__(3600)
        self.left = checks

    @property
    def expired(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_grep_stops_at_its_deadline_with_the_matches_so_far(tmp_path: Path) -> None:
    for n in range(20):
        (tmp_path / f"f{n:02}.txt").write_text("hit\n")
    partial = grep_files("hit", str(tmp_path), None, ripgrep=None, deadline=_Countdown(6))
    assert partial.timed_out and 0 < len(partial.matches) < 20
    assert [os.path.basename(path) for path, _, _ in partial.matches] == [
        f"f{n:02}.txt" for n in range(len(partial.matches))
    ]
    listing_only = grep_files("hit", str(tmp_path), None, ripgrep=None, deadline=_Countdown(0))
    assert listing_only.timed_out and listing_only.matches == []
    with pytest.raises(ToolError, match=r"listing files stopped after 3600 s \(its time limit\)"):
        list_files(str(tmp_path), _Countdown(0))


def test_every_file_tool_says_in_one_line_that_it_ran_out_of_time(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.txt").write_text("hit\n")
    monkeypatch.setattr(search, "SEARCH_DEADLINE", 0)
    monkeypatch.setattr(files, "FILE_DEADLINE", 0)
    ctx = ToolContext(workspace=str(workspace), spill_dir=str(workspace / ".spill"))
    registry = ToolRegistry(builtin_tools())
    grep = registry.prepare("grep", {"pattern": "hit"}, ctx).run()
    assert grep["truncated"] is True and grep["matches"] == ""
    assert grep["timed_out"] == (
        "grep stopped after 0 s (its time limit); these are the matches found so far: "
        "search a narrower path or pattern"
    )
    with pytest.raises(ToolError, match=r"^listing files stopped after 0 s \(its time limit\)$"):
        registry.prepare("glob", {"pattern": "*"}, ctx).run()
    with pytest.raises(ToolError, match=r"^reading a.txt stopped after 0 s \(its time limit\)$"):
        registry.prepare("read_file", {"path": "a.txt"}, ctx).run()


@pytest.mark.timeout(30)
def test_a_hung_ripgrep_is_killed_at_the_deadline(tmp_path: Path) -> None:
    hung = tmp_path / "rg"
    (tmp_path / "a.txt").write_text("hit\n")
    hung.write_text(f"#!/bin/sh\nprintf '%s\\0001:hit\\n' '{tmp_path}/a.txt'\nexec sleep 60\n")
    hung.chmod(0o755)
    partial = grep_files("hit", str(tmp_path), None, ripgrep=str(hung), deadline=Deadline(0.5))
    assert partial.timed_out and partial.matches == [(f"{tmp_path}/a.txt", 1, "hit")]


# -- bounded lines -------------------------------------------------------------------------------------


class _Trickle(io.RawIOBase):
    """A stream handing out at most ``step`` bytes per read: every chunk boundary gets exercised."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.at = data, step, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        piece = self.data[self.at : self.at + min(self.step, size if size >= 0 else self.step)]
        self.at += len(piece)
        return piece


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r\n", b"\xc3\xa9", b"x" * 37]), max_size=60).map(
        b"".join
    ),
    cap=st.integers(1, 50),
    step=st.integers(1, 70),
    stop=st.integers(0, 10),
)
def test_lines_are_streamed_with_a_per_line_cap(data: bytes, cap: int, step: int, stop: int) -> None:
    """Every line, cut to the cap whatever the chunk boundaries; stopped early, a prefix of them."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    expected = [(line[:cap], len(line) > cap) for line in lines]
    assert list(iter_lines(_Trickle(data, step), cap, lambda: True)) == expected  # type: ignore[arg-type]
    chunks = iter(range(stop))
    stopped = list(iter_lines(_Trickle(data, step), cap, lambda: next(chunks, None) is not None))  # type: ignore[arg-type]
    assert stopped == expected[: len(stopped)]
    if stop * step <= len(data):  # stopped before seeing the end: the unfinished line is left out
        assert sum(1 for _, cut in stopped if not cut) <= data[: stop * step].count(b"\n")
