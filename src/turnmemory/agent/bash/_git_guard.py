"""Nothing a contained command writes runs on the host through git.

Host-side git (an escalated ``git status``, the ``glob`` tool's ``git ls-files``, the user's own
``git`` after the session) reads files that can name a program: a git directory's ``config``,
``config.worktree`` and ``commondir``, its ``hooks``, ``info/attributes``, ``worktrees/`` and
``modules/``; a ``.git`` file's ``gitdir:``; the files its configuration includes, the hooks
directory and the programs it names when they lie in the workspace; and the repositories nested in
the workspace (``git status`` enters every submodule it finds, and runs that repository's
configuration). For each contained command :func:`guard` makes them read-only or absent:

- The workspace's ``.git`` directory stays where it is (bound onto itself, so it can be neither
  renamed nor replaced) and writable, so ``git add`` and ``git commit`` work: objects, refs, the
  index, ``HEAD``. The entries of :data:`PROTECTED` are read-only; one that does not exist is held
  by a read-only placeholder for the command's life (an empty directory or file; ``commondir`` one
  that names the directory itself), so it cannot be created either. When one of them is a symbolic
  link, the whole ``.git`` is read-only.
- A workspace without ``.git`` gets a read-only empty ``.git`` for the command's life: no repository
  can be made where host git would find it (an empty ``.git`` directory is no repository to git). A
  ``.git`` directory that is no repository (without ``HEAD``) is read-only as it is.
- A ``.git`` file (a linked worktree, a submodule's checkout) is read-only, and so is the directory
  it names when that lies in the workspace.
- Every repository nested in the workspace (a ``.git`` anywhere below its top) is read-only. One
  that a command made is *set aside* when it ends: its ``.git`` renamed ``.git.untrusted``, so no
  host git enters it (:class:`Repositories` keeps the map of them current between commands with an
  incremental walk that stats directories and lists only those that changed).
- So is every bare repository in the workspace, the top included: a directory git takes for a git
  directory when it runs there or below (a ``HEAD`` beside ``objects`` and ``refs``, or beside a
  ``commondir``; ``git init --bare .`` makes one). One a command made is set aside when it ends: its
  ``HEAD`` renamed ``HEAD.untrusted``, after which git takes it for a plain directory.
- The configuration files host git reads that lie in the workspace, the paths they include,
  ``core.hooksPath`` and the programs of :data:`PROGRAM_KEYS`, when they lie in the workspace, are
  read-only too (held by a placeholder when they do not exist).

bubblewrap drops every capability (``--cap-drop ALL``), so no contained process can unmount any of
this, whoever runs the agent. Placeholders are removed when the command ends. What remains open:
while a contained command runs, a repository it has just made is set aside only when it ends; a
rebase it leaves half done keeps its to-do list (``exec`` lines run at ``git rebase --continue``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shlex
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from turnmemory.agent._credentials import host_environment

__all__ = ["MAX_ENTRIES", "PROGRAM_KEYS", "PROTECTED", "Guard", "Repositories", "guard"]

PROTECTED = (
    "config",
    "config.worktree",
    "commondir",
    "hooks",
    "info",
    "worktrees",
    "modules",
    "remotes",
    "branches",
)
"""Entries of the workspace's git directory a contained command may not change."""
_PLACEHOLDER_DIRS = frozenset({"hooks", "info", "worktrees", "modules", "remotes", "branches"})
_COMMONDIR = b".\n"
"""A ``commondir`` naming the git directory itself: to git the same as none."""
PROGRAM_KEYS = (
    "alias.*",
    "core.askpass",
    "core.editor",
    "core.fsmonitor",
    "core.gitproxy",
    "core.pager",
    "core.sshcommand",
    "core.alternaterefscommand",
    "credential.helper",
    "credential.*.helper",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "filter.*.clean",
    "filter.*.process",
    "filter.*.smudge",
    "gpg.program",
    "gpg.*.program",
    "interactive.difffilter",
    "merge.*.driver",
    "mergetool.*.cmd",
    "pager.*",
    "sequence.editor",
    "uploadpack.packobjectshook",
)
"""Configuration keys (lower case, ``*`` any part) whose value is a command: a program of it that
lies in the workspace is protected like a hook."""
MAX_ENTRIES = 1_000_000
"""The most directory entries the walk for nested repositories reads; past it, nested repositories
are not looked for (the agent says so once)."""
ASIDE = ".untrusted"
"""What a repository a contained command made gets after its ``.git`` (or ``HEAD``) when it is set aside."""
_HOT = 0.1
"""Seconds: a directory changed this close to the last walk is listed again (timestamps are coarse)."""
_CONFIG_TIMEOUT = 5


@dataclass(frozen=True, slots=True)
class _Node:
    """What a ``.git`` entry is: its kind and identity (a moved entry keeps it; a new one does not)."""

    kind: str
    device: int
    inode: int
    detail: tuple[object, ...] = ()


@dataclass(slots=True)
class _Dir:
    stamp: tuple[int, int, int]
    subdirs: tuple[str, ...]
    git: _Node | None
    entries: int
    head: _Node | None = None
    """The directory's ``HEAD`` when the directory is itself a git directory (see :func:`_bare`)."""


class Repositories:
    """Every ``.git`` below a workspace's top, kept current by an incremental walk."""

    def __init__(self, root: str, limit: int = MAX_ENTRIES) -> None:
        self.root = root
        self.limit = limit
        self.complete = True
        """``False`` once the workspace held more than ``limit`` entries (nested ones are not looked for)."""
        self._dirs: dict[str, _Dir] = {}
        self._walked = 0.0
        self._entries = 0

    def refresh(self) -> dict[str, _Node]:
        """Each ``.git`` (relative path: ``.git``, ``sub/.git``) and what it is, as the workspace holds them now."""
        started = time.time()
        if not self.complete:
            return {}
        if not self._dirs:
            self._scan("")
        else:
            for relative in list(self._dirs):
                known = self._dirs.get(relative)
                if known is None:
                    continue  # dropped with a parent that is gone
                now = _stamp(self._path(relative))
                if now != known.stamp or known.stamp[1] >= (self._walked - _HOT) * 1e9:
                    self._rescan(relative)
        self._walked = started
        if not self.complete:
            self._dirs.clear()
            return {}
        found = {
            os.path.join(relative, ".git"): entry.git for relative, entry in self._dirs.items() if entry.git
        }
        return found | {
            os.path.join(relative, "HEAD"): entry.head for relative, entry in self._dirs.items() if entry.head
        }

    def _path(self, relative: str) -> str:
        return os.path.join(self.root, relative) if relative else self.root

    def _scan(self, top: str) -> None:
        pending = [top]
        while pending and self.complete:
            relative = pending.pop()
            listed = self._list(relative)
            if listed is None:
                continue
            self._keep(relative, listed)
            pending.extend(listed.subdirs)

    def _rescan(self, relative: str) -> None:
        old = self._dirs[relative]
        listed = self._list(relative)
        if listed is None:
            self._drop(relative)
            return
        self._keep(relative, listed)
        for gone in set(old.subdirs) - set(listed.subdirs):
            self._drop(gone)
        for new in set(listed.subdirs) - set(old.subdirs):
            self._scan(new)

    def _keep(self, relative: str, listed: _Dir) -> None:
        old = self._dirs.get(relative)
        self._entries += listed.entries - (old.entries if old is not None else 0)
        self._dirs[relative] = listed
        if self._entries > self.limit:
            self.complete = False

    def _drop(self, relative: str) -> None:
        entry = self._dirs.pop(relative, None)
        if entry is not None:
            self._entries -= entry.entries
            for sub in entry.subdirs:
                self._drop(sub)

    def _list(self, relative: str) -> _Dir | None:
        path = self._path(relative)
        stamp = _stamp(path)
        if stamp is None:
            return None
        subdirs: list[str] = []
        git: _Node | None = None
        names: set[str] = set()
        count = 0
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    count += 1
                    if entry.name in _BARE_NAMES and not (
                        entry.name == "HEAD" and entry.is_dir(follow_symlinks=False)
                    ):
                        names.add(entry.name)
                    if entry.name == ".git":
                        git = _node(entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        subdirs.append(os.path.join(relative, entry.name))
        except OSError:
            return None
        head = _node(os.path.join(path, "HEAD")) if _bare(names) else None
        return _Dir(stamp, tuple(subdirs), git, count, head)


_BARE_NAMES = frozenset({"HEAD", "commondir", "objects", "refs"})


def _bare(names: set[str]) -> bool:
    """Whether a directory holding these of :data:`_BARE_NAMES` is one git takes for a git directory when
    it runs there or below (a bare repository): a ``HEAD`` that is no directory, and ``objects`` and
    ``refs``, or a ``commondir`` naming where they are."""
    return "HEAD" in names and ("commondir" in names or {"objects", "refs"} <= names)


def _stamp(path: str) -> tuple[int, int, int] | None:
    """A directory's inode and change times (``None``: not a directory, or gone)."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns


def _node(path: str) -> _Node | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return _Node("dir", info.st_dev, info.st_ino)
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            return _Node("link", info.st_dev, info.st_ino, (os.readlink(path),))
    return _Node("file", info.st_dev, info.st_ino, (info.st_size, info.st_mtime_ns))


@dataclass(slots=True)
class _Placeholder:
    """A read-only stand-in for something that does not exist, made for one command and removed after."""

    path: str
    directory: bool
    content: bytes = b""
    made: list[str] = field(default_factory=list)
    """What was created, parents first: removed in reverse if still as made."""
    identity: tuple[int, int] | None = None

    def create(self, root: str) -> bool:
        """Make it (and its missing parents inside ``root``); ``False`` if something is there now."""
        parent = os.path.dirname(self.path)
        missing: list[str] = []
        while not os.path.lexists(parent) and parent.startswith(root + os.sep):
            missing.append(parent)
            parent = os.path.dirname(parent)
        try:
            for directory in reversed(missing):
                os.mkdir(directory, 0o755)
                self.made.append(directory)
            if self.directory:
                os.mkdir(self.path, 0o755)
            else:
                descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(self.content)
        except OSError:
            self.remove()
            return False
        info = os.stat(self.path, follow_symlinks=False)
        self.identity = info.st_dev, info.st_ino
        return True

    def remove(self) -> None:
        """Remove what :meth:`create` made, if it is still as it was made."""
        if self.identity is not None:
            with contextlib.suppress(OSError):
                info = os.stat(self.path, follow_symlinks=False)
                if (info.st_dev, info.st_ino) == self.identity:
                    if self.directory:
                        os.rmdir(self.path)
                    elif info.st_size == len(self.content):
                        os.unlink(self.path)
            self.identity = None
        for directory in reversed(self.made):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        self.made.clear()


@dataclass(slots=True)
class Guard:
    """The protection of one contained command: bubblewrap arguments, and what to do when it ends."""

    workspace: str
    repositories: Repositories
    args: list[str]
    before: dict[str, _Node]
    placeholders: list[_Placeholder]
    notes: list[str]

    def settle(self) -> list[str]:
        """After the command: remove the placeholders, set aside every repository it made; what was done."""
        for placeholder in reversed(self.placeholders):
            placeholder.remove()
        self.placeholders.clear()
        moved = {node for node in self.before.values() if node.kind == "dir"}  # a directory may move
        notes = list(self.notes)
        for relative, node in sorted(self.repositories.refresh().items()):
            if node not in moved and self.before.get(relative) != node:  # a .git file means where it is
                notes.append(_set_aside(self.workspace, relative))
        return notes


def guard(workspace: str, repositories: Repositories) -> Guard:
    """Protect what host git would run for one contained command in ``workspace`` (see the module)."""
    notes: list[str] = []
    was_complete = repositories.complete
    before = repositories.refresh()
    if was_complete and not repositories.complete:
        notes.append(
            f"the workspace holds more than {repositories.limit} entries: repositories a command makes "
            "below its top are not set aside"
        )
    placeholders: list[_Placeholder] = []
    args: list[str] = []

    def read_only(path: str) -> None:
        args.extend(("--ro-bind", path, path))

    def hold(path: str, directory: bool, content: bytes) -> None:
        placeholder = _Placeholder(path, directory, content)
        if placeholder.create(workspace):
            placeholders.append(placeholder)
            read_only(path)
        elif os.path.lexists(path):  # made meanwhile (another agent's placeholder): protect it as it is
            read_only(os.path.realpath(path))

    dot_git = os.path.join(workspace, ".git")
    try:
        info = os.stat(dot_git, follow_symlinks=False)
    except FileNotFoundError:
        hold(dot_git, True, b"")
    else:
        if stat.S_ISDIR(info.st_mode) and os.path.isfile(os.path.join(dot_git, "HEAD")):
            _git_directory(dot_git, args, hold)
        elif stat.S_ISDIR(info.st_mode):  # no repository (another command's placeholder): nothing to write
            read_only(dot_git)
        else:
            target = _gitdir_of(dot_git) if stat.S_ISREG(info.st_mode) else os.path.realpath(dot_git)
            if stat.S_ISREG(info.st_mode):
                read_only(dot_git)
            if target is not None and _inside(target, workspace) and os.path.isdir(target):
                read_only(target)
    for relative in sorted(before.keys() - {".git"}):
        if os.path.basename(relative) == "HEAD":  # a bare repository: all of it
            relative = os.path.dirname(relative)
        path = os.path.realpath(os.path.join(workspace, relative))
        if _inside(path, workspace) and os.path.lexists(path):
            read_only(path)
        target = _gitdir_of(path) if os.path.isfile(path) else None
        if target is not None and _inside(target, workspace) and os.path.isdir(target):
            read_only(target)
    for path, directory in _configured_paths(workspace, notes):
        if os.path.lexists(path):
            read_only(os.path.realpath(path))
        else:
            hold(path, directory, b"")
    return Guard(workspace, repositories, args, before, placeholders, notes)


_Hold = Callable[[str, bool, bytes], None]
"""Make a read-only placeholder: ``(path, is a directory, content)``."""


def _git_directory(git_dir: str, args: list[str], hold: _Hold) -> None:
    """The workspace's own git directory: pinned and writable, its :data:`PROTECTED` entries read-only."""
    entries = [os.path.join(git_dir, name) for name in PROTECTED]
    if any(os.path.islink(path) for path in entries):
        args.extend(("--ro-bind", git_dir, git_dir))  # a link cannot be held in place: all of it read-only
        return
    args.extend(("--bind", git_dir, git_dir))
    for name, path in zip(PROTECTED, entries, strict=True):
        if os.path.lexists(path):
            args.extend(("--ro-bind", path, path))
        else:
            hold(path, name in _PLACEHOLDER_DIRS, _COMMONDIR if name == "commondir" else b"")


def _gitdir_of(path: str) -> str | None:
    """The git directory a ``.git`` file names (``gitdir: ...``), resolved; ``None`` if it names none."""
    try:
        with open(path, "rb") as handle:
            first = handle.read(4096).split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    named = first[len("gitdir:") :].strip()
    return os.path.realpath(os.path.join(os.path.dirname(path), named))


def _inside(path: str, workspace: str) -> bool:
    return path == workspace or path.startswith(workspace.rstrip(os.sep) + os.sep)


def _configured_paths(workspace: str, notes: list[str]) -> Iterator[tuple[str, bool]]:
    """Paths in the workspace that host git's configuration reads or runs: ``(path, is a directory)``
    (read even from a repository another user owns, whose owner's git would run them)."""
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "config", "--list", "--show-origin", "--null"],
            cwd=workspace,
            env=host_environment({"GIT_TERMINAL_PROMPT": "0"}),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_CONFIG_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        if not isinstance(error, FileNotFoundError):
            notes.append(
                f"could not read the git configuration ({error}): the paths it names are not protected"
            )
        return
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    for origin, item in zip(fields[::2], fields[1::2], strict=False):
        key, _, value = item.partition("\n")
        key = key.lower()
        source = origin[len("file:") :] if origin.startswith("file:") else None
        base = os.path.dirname(os.path.join(workspace, source)) if source else workspace
        if source:
            yield from _within(os.path.join(workspace, source), workspace, directory=False)
        if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
            yield from _within(os.path.join(base, os.path.expanduser(value)), workspace, directory=False)
        elif key == "core.hookspath":
            yield from _within(os.path.join(workspace, os.path.expanduser(value)), workspace, directory=True)
        elif any(fnmatch.fnmatchcase(key, pattern) for pattern in PROGRAM_KEYS):
            for word in _program_words(value):
                yield from _within(os.path.join(workspace, word), workspace, directory=False)


def _program_words(command: str) -> Sequence[str]:
    """The words of a configured command that name a file by path (``./run.sh``, ``tools/x``)."""
    try:
        words = shlex.split(command.lstrip("!"))
    except ValueError:
        words = command.lstrip("!").split()
    return [os.path.expanduser(word) for word in words if "/" in word]


def _within(path: str, workspace: str, *, directory: bool) -> Iterator[tuple[str, bool]]:
    real = os.path.realpath(path)
    if _inside(real, workspace) and real != workspace:
        yield real, directory


def _set_aside(workspace: str, relative: str) -> str:
    """Rename a ``.git`` (or a bare repository's ``HEAD``) a contained command made to ``.git.untrusted``
    (``HEAD.untrusted``; a free name); what was done."""
    path = os.path.join(workspace, relative)
    name = os.path.basename(path) + ASIDE
    for number in range(1, 1000):
        aside = os.path.join(os.path.dirname(path), name if number == 1 else f"{name}-{number}")
        if os.path.lexists(aside):
            continue
        try:
            os.rename(path, aside)
        except OSError as error:
            return f"could not set aside {relative} ({error.strerror}): do not run git in {os.path.dirname(relative)}"
        return (
            f"set aside {relative}, a git repository this command made (host git would run its "
            f"configuration): it is now {os.path.relpath(aside, workspace)}"
        )
    return f"could not set aside {relative}: do not run git in {os.path.dirname(relative)}"
