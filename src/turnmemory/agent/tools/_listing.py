"""Listing a directory's files the way git would: ignored files left out.

Inside a git work tree the listing comes from ``git ls-files`` (tracked and untracked, minus what
``.gitignore`` and friends exclude; the repository's ``core.fsmonitor`` command is never run). Elsewhere a
small ``.gitignore`` matcher walks the tree: nested ``.gitignore`` files, ``!`` negation, directory-only
``dir/`` patterns, anchored ``/x`` and ``a/b`` patterns and ``**``. Either way symlinked directories are
not entered (a symlink is listed as a file), and the listing stops at its deadline. git blocks on a
``.gitignore`` that is a FIFO; it gets half the time, then the walker (which reads only regular
``.gitignore`` files) lists the tree instead.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from turnmemory.agent.tools._base import Deadline, ToolError, open_regular

__all__ = ["IgnoreRule", "glob_regex", "list_files", "parse_gitignore"]

MAX_IGNORE_FILE_BYTES = 1_000_000
"""A larger ``.gitignore`` is not read (its rules are left out)."""


def glob_regex(pattern: str) -> str:
    """A regex (to ``fullmatch`` a ``/``-separated path) for a glob with ``**``, ``*``, ``?`` and ``[...]``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One ``.gitignore`` line, compiled; ``base`` is its directory relative to the walk root."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    base: str

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the rule applies to ``path`` (relative to the walk root)."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not path.startswith(self.base + "/"):
                return False
            path = path[len(self.base) + 1 :]
        return self.regex.fullmatch(path) is not None


def parse_gitignore(text: str, base: str = "") -> list[IgnoreRule]:
    """The rules of one ``.gitignore`` file found in directory ``base``."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = glob_regex(line) if anchored or line.startswith("**") else "(?:.*/)?" + glob_regex(line)
        rules.append(IgnoreRule(re.compile(regex), negate, dir_only, base))
    return rules


def _ignored(rules: list[IgnoreRule], path: str, is_dir: bool) -> bool:
    verdict = False
    for rule in rules:
        if rule.matches(path, is_dir):
            verdict = not rule.negate
    return verdict


def _ignore_rules(path: str, base: str) -> list[IgnoreRule]:
    """The rules of the ``.gitignore`` at ``path``: none unless it is a regular file of sensible size."""
    try:
        with open_regular(path, path) as handle:
            data = handle.read(MAX_IGNORE_FILE_BYTES + 1)
    except (ToolError, OSError):
        return []
    if len(data) > MAX_IGNORE_FILE_BYTES:
        return []
    return parse_gitignore(data.decode("utf-8", "replace"), base)


def _walk(root: str, deadline: Deadline) -> Iterator[str]:
    def visit(directory: str, rel: str, rules: list[IgnoreRule]) -> Iterator[str]:
        deadline.check("listing files")
        ignore_file = os.path.join(directory, ".gitignore")
        if os.path.lexists(ignore_file):
            rules = rules + _ignore_rules(ignore_file, rel)
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.name == ".git" or _ignored(rules, path, is_dir):
                continue
            if is_dir:
                yield from visit(entry.path, path, rules)
            else:
                yield path

    yield from visit(root, "", [])


_LS_FILES = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")


def _git_files(root: str, deadline: Deadline) -> list[str] | None:
    try:
        listed = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-C", root, *_LS_FILES],
            capture_output=True,
            timeout=deadline.remaining() / 2,  # git blocks on a FIFO .gitignore: leave the walk time
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    names = {name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name}
    real_dirs: dict[str, bool] = {"": True}

    def shown(name: str) -> bool:
        """Whether the entry exists and no directory on its way is a symlink (a stale index can list one)."""
        parent = os.path.dirname(name)
        if parent not in real_dirs:
            real_dirs[parent] = os.path.realpath(os.path.join(root, parent)) == os.path.join(root, parent)
        return real_dirs[parent] and os.path.lexists(os.path.join(root, name))

    return sorted(name for name in names if shown(name))


def list_files(root: str, deadline: Deadline) -> list[str]:
    """The files under the real directory ``root`` that are not ignored, as sorted relative paths.

    Symlinks are listed as files and never entered. A directory git lists nothing in (one it ignores as a
    whole, like ``node_modules``, asked for by name) is walked, with the ``.gitignore`` files inside it.
    :class:`ToolError` when ``deadline`` passes first.
    """
    found = _git_files(root, deadline)
    return found if found else list(_walk(root, deadline))
