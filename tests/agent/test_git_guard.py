"""What keeps a contained command's writes from running through host git, piece by piece: every plant
of :mod:`tests.agent._git_plants` is a real attack (planted on the host, the user's next git runs it)
and none runs once planted from the sandbox; the placeholders leave nothing behind and host git keeps
working while they stand; no capability is left to unmount anything; the incremental map of nested
repositories always equals a fresh walk (a property test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._git_plants import PLANTS, USER_ENV, Plant, build_repository, git_argv, user_runs_git

from turnmemory.agent.bash._git_guard import Repositories, guard
from turnmemory.agent.bash._sandbox import open_sandbox, sandbox_unavailable
from turnmemory.agent.tools import ToolContext, ToolRegistry, builtin_tools

UNAVAILABLE = sandbox_unavailable()
SANDBOXED = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no bash sandbox: {UNAVAILABLE}")
REGISTRY = ToolRegistry(builtin_tools(subagent=lambda agent, task: ""))


def _git(workspace: Path) -> Any:
    def git(
        *args: str, cwd: Path | None = None, check: bool = True, terminal: bool = False
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            git_argv(args, terminal=terminal),
            cwd=cwd or workspace,
            env={**os.environ, **USER_ENV, "HOME": str(workspace.parent)},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert not check or done.returncode == 0, (args, done.stderr)
        return done

    return git


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """The user's repository, built once with and once without a configured hooks directory."""
    made = {}
    for hooks_path in (True, False):
        root = tmp_path_factory.mktemp(f"template-{hooks_path}")
        build_repository(root, _git(root / "ws"), hooks_path=hooks_path)
        made[hooks_path] = root
    return made


def _copy(template: Path, where: Path) -> Path:
    shutil.copytree(template, where, symlinks=True)
    return where / "ws"


def _contained(workspace: Path, command: str) -> dict[str, Any]:
    sandbox, notice = open_sandbox("workspace-write", str(workspace))
    assert sandbox is not None, notice
    ctx = ToolContext(workspace=str(workspace), spill_dir=str(workspace.parent / "spill"), sandbox=sandbox)
    action = REGISTRY.prepare("bash", {"command": command}, ctx)
    assert action.access is not None and action.access.contained
    return action.run()


@SANDBOXED
@pytest.mark.parametrize("plant", PLANTS, ids=[plant.name for plant in PLANTS])
def test_each_plant_runs_when_planted_on_the_host_and_not_from_the_sandbox(
    plant: Plant, templates: dict[bool, Path], tmp_path: Path
) -> None:
    for where, contained in (("host", False), ("sandbox", True)):
        workspace = _copy(templates[plant.hooks_path], tmp_path / where)
        marker = tmp_path / f"marker-{where}"
        command = plant.command(f"touch {marker}")
        if contained:
            _contained(workspace, command)
        else:
            subprocess.run(
                ["bash", "-c", command], cwd=workspace, capture_output=True, timeout=30, check=False
            )
        user_runs_git(_git(workspace), workspace)
        assert marker.exists() == (not contained), f"planted from the {where}"


@SANDBOXED
@pytest.mark.parametrize("repository", [True, False], ids=["in a repository", "without one"])
def test_placeholders_leave_nothing_behind_and_host_git_works_meanwhile(
    repository: bool, templates: dict[bool, Path], tmp_path: Path
) -> None:
    if repository:
        workspace = _copy(templates[False], tmp_path / "copy")
    else:
        workspace = tmp_path / "ws"
        workspace.mkdir()

    def listing() -> list[str]:
        return sorted(str(path.relative_to(workspace)) for path in workspace.rglob("*"))

    before = listing()
    statuses: list[int] = []

    def meanwhile() -> None:
        while not (workspace / "started").exists():
            time.sleep(0.01)
        for args in (["status"], ["log", "-1"], ["rev-parse", "--git-common-dir"]):
            statuses.append(_git(workspace)(*args, check=False).returncode)
        (workspace / "checked").touch()

    thread = threading.Thread(target=meanwhile)
    thread.start()
    out = _contained(
        workspace, "touch started; while [ ! -e checked ]; do sleep 0.05; done; rm started checked"
    )
    thread.join()
    assert out["exit_code"] == 0
    assert listing() == before, "every placeholder is gone"
    assert statuses == ([0, 0, 0] if repository else [128, 128, 128]), "host git saw the repository as it is"


@SANDBOXED
def test_a_contained_command_has_no_capability(tmp_path: Path) -> None:
    out = _contained(tmp_path, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
    values = {line.split(":")[0]: line.split()[1] for line in out["stdout"].splitlines()}
    assert values and set(values.values()) == {"0000000000000000"}, values


@SANDBOXED
def test_a_linked_protected_entry_makes_the_whole_git_directory_read_only(
    templates: dict[bool, Path], tmp_path: Path
) -> None:
    workspace = _copy(templates[False], tmp_path / "copy")
    real = tmp_path / "real-config"
    shutil.move(workspace / ".git" / "config", real)
    os.symlink(real, workspace / ".git" / "config")
    out = _contained(
        workspace, "rm .git/config && echo '[core]' > .git/config; git commit -q --allow-empty -m x"
    )
    assert out["exit_code"] != 0
    assert (workspace / ".git" / "config").is_symlink() and os.readlink(workspace / ".git" / "config") == str(
        real
    )


@SANDBOXED
def test_a_bare_repository_is_read_only_and_one_a_command_makes_is_set_aside(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", "--bare", str(workspace / "fixture.git")], check=True)
    config = (workspace / "fixture.git" / "config").read_bytes()
    out = _contained(
        workspace,
        "git --git-dir=fixture.git config core.pager x; echo $? > refused; "
        "git init -q --bare made.git && git init -q --bare .",
    )
    assert out["exit_code"] == 0 and (workspace / "refused").read_text() != "0\n", out
    assert (workspace / "fixture.git" / "config").read_bytes() == config
    assert (workspace / "fixture.git" / "HEAD").is_file(), "a bare repository that was there stays"
    for made in (workspace / "made.git", workspace):
        assert (made / "HEAD.untrusted").is_file() and not (made / "HEAD").exists(), made
    assert out["note"].count("set aside") == 2, out["note"]


def test_a_workspace_too_large_to_walk_is_said_once(tmp_path: Path) -> None:
    for number in range(30):
        (tmp_path / f"d{number}").mkdir()
    repositories = Repositories(str(tmp_path), limit=10)
    first = guard(str(tmp_path), repositories)
    second = guard(str(tmp_path), repositories)
    assert [note for note in first.notes if "more than 10 entries" in note] != []
    assert second.notes == []
    for protection in (first, second):
        protection.settle()
    assert not (tmp_path / ".git").exists()


# -- the incremental walk -------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", ".git", "x.git", "HEAD", "objects", "refs", "commondir"])
_OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["mkdir", "git-dir", "git-file", "git-link", "bare", "remove", "rename", "touch"]),
        st.lists(_NAMES, min_size=1, max_size=3),
        st.lists(_NAMES, min_size=1, max_size=3),
    ),
    max_size=12,
)


def _apply(root: Path, operation: str, path: list[str], other: list[str]) -> None:
    target, second = root.joinpath(*path), root.joinpath(*other)
    try:
        if operation == "mkdir":
            target.mkdir(parents=True)
        elif operation == "git-dir":
            (target / ".git").mkdir(parents=True)
        elif operation == "git-file":
            target.mkdir(parents=True, exist_ok=True)
            (target / ".git").write_text("gitdir: elsewhere\n")
        elif operation == "bare":
            for name in ("objects", "refs"):
                (target / name).mkdir(parents=True, exist_ok=True)
            (target / "HEAD").write_text("ref: refs/heads/main\n")
        elif operation == "git-link":
            target.mkdir(parents=True, exist_ok=True)
            os.symlink("elsewhere", target / ".git")
        elif operation == "remove":
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
        elif operation == "rename":
            os.rename(target, second)
        else:
            target.touch()
    except OSError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_OPERATIONS, min_size=1, max_size=4))
def test_the_incremental_map_of_repositories_equals_a_fresh_walk(tmp_path: Path, steps: list[Any]) -> None:
    root = tmp_path / f"w{time.monotonic_ns()}"
    root.mkdir()
    kept = Repositories(str(root))
    for batch in steps:
        for operation in batch:
            _apply(root, *operation)
        assert kept.refresh() == Repositories(str(root)).refresh()
