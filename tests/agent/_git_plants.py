"""What a hostile command plants in a repository for a later host-side git to run, the repository it
is planted in, and what the user runs afterwards: shared by the end-to-end attack through
``turnmemory run`` and by the test that each plant is a real attack (it runs when planted on the host)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Git = Callable[..., Any]
"""``git(*args, cwd=None, check=True, terminal=False)``: git as the user, in the workspace unless
``cwd``; with ``terminal``, its output on a terminal (where git starts a pager)."""
USER_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "PAGER": "cat"}
"""The user's environment for git: a pager that ends by itself (the configured one still wins)."""


def git_argv(args: tuple[str, ...], *, terminal: bool) -> list[str]:
    """The user's git command line; with ``terminal``, run by ``script`` on a pseudo-terminal."""
    argv = ["git", "-c", "user.email=user@example.com", "-c", "user.name=User", *args]
    return ["script", "-qec", shlex.join(argv), "/dev/null"] if terminal else argv


@dataclass(frozen=True)
class Plant:
    """One way to plant: a shell command running ``touch`` when a later host git obeys it; ``hooks_path``:
    the repository's configuration names a hooks directory (else ``.git/hooks`` is used)."""

    name: str
    command: Callable[[str], str]
    hooks_path: bool = True


def _config(touch: str) -> str:
    return f"printf '[core]\\n\\tfsmonitor = {touch}; false\\n'"


def _hook(touch: str) -> str:
    return f"printf '#!/bin/sh\\n{touch}\\n'"


PLANTS = [
    Plant("git config", lambda t: f"git config core.fsmonitor '{t}; false'"),
    Plant("append to .git/config", lambda t: f"{_config(t)} >> .git/config"),
    Plant(
        "commondir",
        lambda t: (
            "mkdir -p evil && cp -r .git/HEAD .git/objects .git/refs evil/ && "
            f"{_config(t)} > evil/config && echo ../evil > .git/commondir"
        ),
    ),
    Plant(
        "config.worktree",
        lambda t: (
            "printf '[extensions]\\n\\tworktreeConfig = true\\n' >> .git/config; "
            f"{_config(t)} > .git/config.worktree"
        ),
    ),
    Plant(
        "rename .git",
        lambda t: f"mv .git .git-old; mkdir -p .git && cp -r .git-old/. .git/; {_config(t)} > .git/config",
    ),
    Plant(
        "rename .git/hooks",
        lambda t: (
            f"mv .git/hooks .git/hooks-old; mkdir -p .git/hooks; {_hook(t)} > .git/hooks/pre-commit; "
            "chmod +x .git/hooks/pre-commit"
        ),
        hooks_path=False,
    ),
    Plant(
        "write a hook",
        lambda t: f"{_hook(t)} > .git/hooks/post-commit; chmod +x .git/hooks/post-commit",
        hooks_path=False,
    ),
    Plant(
        "unmount",
        lambda t: f"umount .git/config; umount .git/hooks; umount .git; {_config(t)} >> .git/config",
    ),
    Plant("the configured hooks directory", lambda t: f"{_hook(t)} > .githooks/pre-commit"),
    Plant("an included config file", lambda t: f"{_config(t)} >> project.gitconfig"),
    Plant("an included config file that was missing", lambda t: f"{_config(t)} > absent.gitconfig"),
    Plant(
        "the configured filter's program",
        lambda t: f"printf '#!/bin/sh\\n{t}\\ncat\\n' > tools/tidy.sh; echo changed >> notes.txt",
    ),
    Plant(
        "info/attributes to a driver",
        lambda t: (
            "echo '*.txt diff=evil' >> .git/info/attributes; "
            f"printf '[diff \"evil\"]\\n\\ttextconv = {t} && cat\\n' >> .git/config; echo more >> notes.txt"
        ),
    ),
    Plant(
        "rewrite a submodule's .git file",
        lambda t: (
            f"git init -q --bare evil-sub && {_config(t)} >> evil-sub/config && "
            "printf '[core]\\n\\tbare = false\\n\\tworktree = ../lib\\n' >> evil-sub/config && "
            "printf 'gitdir: ../evil-sub\\n' > lib/.git"
        ),
    ),
    Plant(
        "move a submodule away and make another",
        lambda t: f"mv lib lib-moved && git init -q lib && git -C lib config core.fsmonitor '{t}; false'",
    ),
    Plant(
        "move a submodule where its .git file names a planted directory",
        lambda t: (
            "mkdir -p nest/.git/modules && mv lib nest/lib && "
            "git init -q --bare nest/.git/modules/lib && "
            f"{_config(t)} >> nest/.git/modules/lib/config && "
            "printf '[core]\\n\\tbare = false\\n\\tworktree = ../../../lib\\n' >> nest/.git/modules/lib/config"
        ),
    ),
    Plant(
        "a nested repository behind a gitlink",
        lambda t: (
            "git init -q vendored && git -C vendored -c user.email=a@b -c user.name=a commit -q --allow-empty "
            f"-m v && git -C vendored config core.fsmonitor '{t}; false' && git add vendored"
        ),
    ),
    Plant(
        "a nested repository in a subdirectory",
        lambda t: f"mkdir -p deep/er && git init -q deep/er && {_config(t)} >> deep/er/.git/config",
    ),
    Plant(
        "a bare repository in a subdirectory",
        lambda t: f"git clone -q --bare . bare && git --git-dir=bare config core.pager '{t}; cat'",
    ),
    Plant(
        "a gitfile in a subdirectory",
        lambda t: (
            f"mkdir -p docs && git init -q --bare docs-git && {_config(t)} >> docs-git/config && "
            "printf '[core]\\n\\tbare = false\\n\\tworktree = ../docs\\n' >> docs-git/config && "
            "printf 'gitdir: ../docs-git\\n' > docs/.git"
        ),
    ),
]
"""Each way seen or found to plant something host git runs."""


def build_repository(root: Path, git: Git, *, hooks_path: bool, owner: tuple[int, int] | None = None) -> None:
    """The user's repository in ``root/ws``: a commit, a submodule (from ``root/library``), a filter
    whose program lies in the workspace, an included config file (and one included that does not exist),
    and, with ``hooks_path``, a hooks directory in the workspace named by ``core.hooksPath``."""
    library, ws = root / "library", root / "ws"
    library.mkdir(exist_ok=True)
    files = {
        "notes.txt": "notes\n",
        ".gitattributes": "*.txt filter=tidy\n",
        "tools/tidy.sh": "#!/bin/sh\ncat\n",
        ".githooks/pre-commit": "#!/bin/sh\nexit 0\n",
        "project.gitconfig": "[user]\n\tname = Project\n",
    }
    for name, text in files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    if owner is not None:
        for path in [library, *ws.rglob("*")]:
            os.chown(path, *owner)
    git("init", "-q", cwd=library)
    git("commit", "-q", "--allow-empty", "-m", "library", cwd=library)
    git("init", "-q")
    git("config", "filter.tidy.clean", "./tools/tidy.sh")
    if hooks_path:
        git("config", "core.hooksPath", ".githooks")
    git("config", "--add", "include.path", "../project.gitconfig")
    git("config", "--add", "include.path", "../absent.gitconfig")
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    git("add", "-A")
    git("commit", "-q", "-m", "start")


def user_runs_git(git: Git, workspace: Path) -> None:
    """What the user does after the session: status, diff, a commit (hooks), a submodule update, and
    status and a log on a terminal (the pager) at the top and in each subdirectory a plant may have
    made a repository of."""
    git("status", check=False)
    git("diff", check=False)
    git("commit", "-qam", "after the session", "--allow-empty", check=False)
    git("-c", "protocol.file.allow=always", "submodule", "update", "--init", check=False)
    git("log", "-1", check=False, terminal=True)
    for sub in ("bare", "deep/er", "docs", "lib", "nest/lib", "vendored"):
        if (workspace / sub).is_dir():
            git("status", cwd=workspace / sub, check=False)
            git("log", "-1", cwd=workspace / sub, check=False, terminal=True)
