"""``glob`` and ``grep``: find files by name and lines by regular expression, ignored files left out.

``grep`` searches the files of the same listing with ripgrep when it is installed and a Python scan
otherwise; both honour ``.gitignore`` and report ``path:line:text`` with workspace-relative paths. Both
stay inside what they were pointed at: symlinks are neither followed nor read, FIFOs, devices and
sockets are skipped, files over :data:`MAX_SEARCH_FILE_BYTES` are not searched, and ripgrep reads no
configuration (``RIPGREP_CONFIG_PATH``) and no ignore file of its own. Memory is bounded per line, and
a search that reaches :data:`SEARCH_DEADLINE` stops with the matches found so far.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import (
    Action,
    Deadline,
    Tool,
    ToolContext,
    ToolError,
    iter_lines,
    open_regular,
    refuse_special,
)
from turnmemory.agent.tools._listing import glob_regex, list_files
from turnmemory.agent.tools._schema import arguments, string

__all__ = [
    "GLOB",
    "GREP",
    "MAX_GLOB_FILES",
    "MAX_GREP_MATCHES",
    "MAX_SEARCH_FILE_BYTES",
    "SEARCH_DEADLINE",
    "GrepResult",
    "grep_files",
]

MAX_GLOB_FILES = 1000
MAX_GREP_MATCHES = 500
MAX_MATCH_CHARS = 500
MAX_SEARCH_FILE_BYTES = 100 * 1024 * 1024
"""Larger files are not searched (ripgrep's ``--max-filesize``)."""
MAX_SEARCH_LINE_BYTES = 1024 * 1024
"""The Python scan searches at most this much of one line."""
SEARCH_DEADLINE = 30.0
"""How long one glob or grep call may take."""
_PREVIEW_BYTES = 2000
_RG_CUT = " [... omitted end of long line]"
_RG_LINE_BYTES = 16 * 1024
_RG_ARGS_BYTES = 100_000
_SNIFF_BYTES = 8192


def _search_root(arguments: Mapping[str, Any], ctx: ToolContext) -> tuple[str, bool]:
    raw = arguments.get("path")
    return ctx.resolve(raw if isinstance(raw, str) and raw.strip() else ".")


def _name_matcher(pattern: str) -> re.Pattern[str]:
    """A glob for relative paths; without a ``/`` it matches file names at any depth."""
    regex = glob_regex(pattern)
    return re.compile(regex if "/" in pattern else "(?:.*/)?" + regex)


# -- glob -----------------------------------------------------------------------------------------


def _prepare_glob(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    root, inside = _search_root(arguments, ctx)
    pattern: str = arguments["pattern"]

    def run() -> dict[str, Any]:
        try:
            is_dir = stat.S_ISDIR(os.lstat(root).st_mode)
        except FileNotFoundError:
            is_dir = False
        if not is_dir:
            raise ToolError(f"not a directory: {ctx.relative(root)}")
        matcher = re.compile(glob_regex(pattern.lstrip("/")))
        found = [name for name in list_files(root, Deadline(SEARCH_DEADLINE)) if matcher.fullmatch(name)]
        files = [ctx.relative(os.path.join(root, name)) for name in found[:MAX_GLOB_FILES]]
        return {
            "pattern": pattern,
            "path": root,
            "files": files,
            "count": len(found),
            "truncated": len(found) > MAX_GLOB_FILES,
        }

    return Action(run=run, access=Access("read", root, not inside))


GLOB = Tool(
    name="glob",
    description=(
        "List files whose path (relative to `path`) matches a glob pattern: `*` within a directory, `**` across "
        "directories, e.g. `**/*.py` or `src/*.ts`. Files ignored by .gitignore are left out. At most 1000 files."
    ),
    input_schema=arguments(
        {
            "pattern": string("Glob pattern, e.g. **/*.py", non_empty=True),
            "path": string("Directory to search. Default: the workspace."),
        },
        "pattern",
    ),
    prepare=_prepare_glob,
)


# -- grep -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepResult:
    """Matches as ``(absolute path, line, text)``; ``timed_out`` when the deadline cut the search short."""

    matches: list[tuple[str, int, str]]
    timed_out: bool = False


def grep_files(
    pattern: str, root: str, include: str | None, *, ripgrep: str | None, deadline: Deadline
) -> GrepResult:
    """Matches of ``pattern`` in the files under the real path ``root`` (a directory or a regular file).

    ``ripgrep`` is the ``rg`` executable to use, or ``None`` for the Python scan. Both search the same
    files: the listing (``.gitignore`` honoured, read safely), each a regular file of at most
    :data:`MAX_SEARCH_FILE_BYTES`. ripgrep is handed the files, so it never walks a tree or reads an
    ignore file itself (a ``.gitignore`` that is a FIFO or a link to ``/dev/zero`` hangs or floods it).
    At most :data:`MAX_GREP_MATCHES` + 1 matches are returned (the extra one signals truncation).
    """
    if os.path.isfile(root) and (size := os.path.getsize(root)) > MAX_SEARCH_FILE_BYTES:
        raise ToolError(
            f"{root} is {size} bytes, over the {MAX_SEARCH_FILE_BYTES} bytes grep searches: "
            "read it in parts with read_file offset and limit"
        )
    try:
        files = _candidates(root, include, deadline)
    except ToolError:
        if not deadline.expired:
            raise
        return GrepResult([], timed_out=True)
    if ripgrep is not None:
        return _ripgrep(ripgrep, pattern, files, deadline)
    return _scan(_compile(pattern), files, deadline)


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ToolError(f"invalid regular expression {pattern!r}: {error}") from None


def _scan(regex: re.Pattern[str], files: list[str], deadline: Deadline) -> GrepResult:
    """The Python search of ``files``, in order, until enough matches or the deadline."""
    matches: list[tuple[str, int, str]] = []
    for path in files:
        if deadline.expired:
            break
        for number, line in _text_lines(path, deadline):
            if regex.search(line):
                matches.append((path, number, line))
                if len(matches) > MAX_GREP_MATCHES:
                    return GrepResult(matches)
    return GrepResult(matches, timed_out=deadline.expired)


def _candidates(root: str, include: str | None, deadline: Deadline) -> list[str]:
    """The files to search: listed, matching ``include``, regular (never a link, FIFO, device or socket)
    and not over the size limit."""
    if os.path.isdir(root):
        names = list_files(root, deadline)
        if include:
            matcher = _name_matcher(include)
            names = [name for name in names if matcher.fullmatch(name)]
        paths = [os.path.join(root, name) for name in names]
    else:
        paths = [root]
    return [path for path in paths if _searchable(path)]


def _searchable(path: str) -> bool:
    """A regular file within the size limit whose start holds no NUL byte (not binary).

    Cheap, since it runs for every listed file: the search itself opens the file again with every check.
    """
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SEARCH_FILE_BYTES:
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return b"\0" not in os.read(fd, _SNIFF_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)


def _text_lines(path: str, deadline: Deadline) -> Iterable[tuple[int, str]]:
    """The lines of a text file, until the deadline; nothing for one that changed kind since it was listed."""
    try:
        handle = open_regular(path, path)
    except (OSError, ToolError):
        return
    with handle:
        lines = iter_lines(handle, MAX_SEARCH_LINE_BYTES, lambda: not deadline.expired)
        for number, (raw, _) in enumerate(lines, start=1):
            yield number, raw.decode("utf-8", "replace").rstrip("\r")


def _batches(files: list[str]) -> Iterable[list[str]]:
    """``files`` in runs short enough for one command line."""
    batch: list[str] = []
    size = 0
    for path in files:
        length = len(os.fsencode(path)) + 1
        if batch and size + length > _RG_ARGS_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += length
    if batch:
        yield batch


def _ripgrep(rg: str, pattern: str, files: list[str], deadline: Deadline) -> GrepResult:
    command = [rg, "--no-config", "--no-ignore", "--line-number", "--with-filename", "--null", "--no-heading"]
    command += ["--color=never", "--no-messages", "--sort=path", f"--max-columns={_PREVIEW_BYTES}"]
    command += ["--max-columns-preview", "-e", pattern, "--"]
    matches: list[tuple[str, int, str]] = []
    for batch in _batches(files):
        if deadline.expired:
            return GrepResult(matches, timed_out=True)
        with subprocess.Popen(
            [*command, *batch], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        ) as rg_run:
            assert rg_run.stdout is not None and rg_run.stderr is not None
            watchdog = threading.Timer(deadline.remaining(), rg_run.kill)
            watchdog.start()
            try:
                whole = True
                while raw := rg_run.stdout.readline(_RG_LINE_BYTES):
                    complete, whole = whole, raw.endswith(b"\n")
                    path, _, rest = raw.decode("utf-8", "replace").rstrip("\r\n").partition("\0")
                    number, _, text = rest.partition(":")
                    if (
                        complete and number.isdigit()
                    ):  # else a "binary file matches" note, or a cut line's rest
                        matches.append((path, int(number), text.removesuffix(_RG_CUT)))
                        if len(matches) > MAX_GREP_MATCHES:
                            rg_run.kill()
                            return GrepResult(matches)
                errors = rg_run.stderr.read(4096).decode("utf-8", "replace").strip().splitlines()
                code = rg_run.wait()
            finally:
                watchdog.cancel()
        if deadline.expired and code not in (0, 1):
            return GrepResult(matches, timed_out=True)
        if code not in (0, 1):
            raise ToolError(f"grep failed: {errors[0] if errors else f'rg exited with {code}'}")
    return GrepResult(matches)


def _prepare_grep(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    root, inside = _search_root(arguments, ctx)
    pattern: str = arguments["pattern"]
    include = arguments.get("include") or None

    def run() -> dict[str, Any]:
        shown = ctx.relative(root)
        try:
            mode = os.lstat(root).st_mode
        except FileNotFoundError:
            raise ToolError(f"path not found: {shown}") from None
        refuse_special(mode, shown)
        result = grep_files(
            pattern, root, include, ripgrep=shutil.which("rg"), deadline=Deadline(SEARCH_DEADLINE)
        )
        found = result.matches
        lines = []
        for path, number, text in found[:MAX_GREP_MATCHES]:
            if len(text) > MAX_MATCH_CHARS:
                text = text[:MAX_MATCH_CHARS] + " [line truncated]"
            lines.append(f"{ctx.relative(path)}:{number}:{text}")
        output: dict[str, Any] = {
            "pattern": pattern,
            "path": root,
            "matches": "\n".join(lines),
            "count": min(len(found), MAX_GREP_MATCHES),
            "truncated": len(found) > MAX_GREP_MATCHES or result.timed_out,
        }
        if result.timed_out:
            output["timed_out"] = (
                f"grep stopped after {SEARCH_DEADLINE:g} s (its time limit); these are the matches found "
                "so far: search a narrower path or pattern"
            )
        return output

    return Action(run=run, access=Access("read", root, not inside))


GREP = Tool(
    name="grep",
    description=(
        "Search file contents for a regular expression. Returns `path:line:text` lines (at most 500). "
        "Files ignored by .gitignore, binary files, symlinks and files over 100 MB are skipped; `include` "
        "filters file names, e.g. *.py."
    ),
    input_schema=arguments(
        {
            "pattern": string("Regular expression to search for.", non_empty=True),
            "path": string("File or directory to search. Default: the workspace."),
            "include": string("Glob for the files to search, e.g. *.py or src/**/*.ts."),
        },
        "pattern",
    ),
    prepare=_prepare_grep,
)
