"""``glob`` and ``grep``: find files by name and lines by regular expression, ignored files left out.

``grep`` uses ripgrep when it is installed and a Python scan of the same file listing otherwise;
both honour ``.gitignore`` and report ``path:line:text`` with workspace-relative paths.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError
from turnmemory.agent.tools._listing import glob_regex, list_files

__all__ = ["GLOB", "GREP", "MAX_GLOB_FILES", "MAX_GREP_MATCHES", "grep_files"]

MAX_GLOB_FILES = 1000
MAX_GREP_MATCHES = 500
MAX_MATCH_CHARS = 500
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
        if not os.path.isdir(root):
            raise ToolError(f"not a directory: {ctx.relative(root)}")
        matcher = re.compile(glob_regex(pattern.lstrip("/")))
        found = [name for name in list_files(root) if matcher.fullmatch(name)]
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
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, e.g. **/*.py"},
            "path": {"type": "string", "description": "Directory to search. Default: the workspace."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    prepare=_prepare_glob,
)


# -- grep -----------------------------------------------------------------------------------------


def grep_files(
    pattern: str, root: str, include: str | None, *, ripgrep: str | None
) -> list[tuple[str, int, str]]:
    """Matches of ``pattern`` under ``root`` (a directory or a file) as ``(absolute path, line, text)``.

    ``ripgrep`` is the ``rg`` executable to use, or ``None`` for the Python scan. At most
    :data:`MAX_GREP_MATCHES` + 1 matches are returned (the extra one signals truncation).
    """
    if ripgrep is not None:
        return _ripgrep(ripgrep, pattern, root, include)
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ToolError(f"invalid regular expression {pattern!r}: {error}") from None
    if os.path.isfile(root):
        candidates: Iterable[str] = [root]
    else:
        names = list_files(root)
        if include:
            matcher = _name_matcher(include)
            names = [name for name in names if matcher.fullmatch(name)]
        candidates = (os.path.join(root, name) for name in names)
    matches: list[tuple[str, int, str]] = []
    for path in candidates:
        for number, line in _text_lines(path):
            if regex.search(line):
                matches.append((path, number, line))
                if len(matches) > MAX_GREP_MATCHES:
                    return matches
    return matches


def _text_lines(path: str) -> Iterable[tuple[int, str]]:
    try:
        with open(path, "rb") as handle:
            if b"\0" in handle.read(_SNIFF_BYTES):
                return
            handle.seek(0)
            for number, raw in enumerate(handle, start=1):
                yield number, raw.decode("utf-8", "replace").rstrip("\r\n")
    except OSError:
        return


def _ripgrep(rg: str, pattern: str, root: str, include: str | None) -> list[tuple[str, int, str]]:
    # The include glob is applied here rather than with rg --glob, which would override .gitignore.
    command = [rg, "--line-number", "--with-filename", "--no-heading", "--color=never", "--no-require-git"]
    command += ["--hidden", "--glob", "!.git", "--sort", "path", "--no-messages", "-e", pattern, "--", root]
    matcher = _name_matcher(include) if include and os.path.isdir(root) else None
    prefix = root.rstrip(os.sep) + os.sep
    matches: list[tuple[str, int, str]] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    ) as rg_run:
        assert rg_run.stdout is not None and rg_run.stderr is not None
        for raw in rg_run.stdout:
            path, _, rest = raw.decode("utf-8", "replace").rstrip("\r\n").partition(":")
            number, _, text = rest.partition(":")
            if not number.isdigit() or (matcher and not matcher.fullmatch(path.removeprefix(prefix))):
                continue
            matches.append((path, int(number), text))
            if len(matches) > MAX_GREP_MATCHES:
                rg_run.kill()
                return matches
        errors = rg_run.stderr.read().decode("utf-8", "replace").strip().splitlines()
        code = rg_run.wait()
    if code not in (0, 1):
        raise ToolError(f"grep failed: {errors[0] if errors else f'rg exited with {code}'}")
    return matches


def _prepare_grep(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    root, inside = _search_root(arguments, ctx)
    pattern: str = arguments["pattern"]
    include = arguments.get("include") or None

    def run() -> dict[str, Any]:
        if not os.path.exists(root):
            raise ToolError(f"path not found: {ctx.relative(root)}")
        found = grep_files(pattern, root, include, ripgrep=shutil.which("rg"))
        lines = []
        for path, number, text in found[:MAX_GREP_MATCHES]:
            if len(text) > MAX_MATCH_CHARS:
                text = text[:MAX_MATCH_CHARS] + " [line truncated]"
            lines.append(f"{ctx.relative(path)}:{number}:{text}")
        return {
            "pattern": pattern,
            "path": root,
            "matches": "\n".join(lines),
            "count": min(len(found), MAX_GREP_MATCHES),
            "truncated": len(found) > MAX_GREP_MATCHES,
        }

    return Action(run=run, access=Access("read", root, not inside))


GREP = Tool(
    name="grep",
    description=(
        "Search file contents for a regular expression. Returns `path:line:text` lines (at most 500). "
        "Files ignored by .gitignore and binary files are skipped; `include` filters file names, e.g. *.py."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "File or directory to search. Default: the workspace."},
            "include": {
                "type": "string",
                "description": "Glob for the files to search, e.g. *.py or src/**/*.ts.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    prepare=_prepare_grep,
)
