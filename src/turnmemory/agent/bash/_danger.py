"""The dangerous-command classifier: why a bash script is dangerous, at any depth, or that it is not.

A dangerous command (a recursive force delete, a force push, a downloaded script piped into a shell,
a write to a block device...) is refused unless ``dangerous`` is allowed explicitly, and always asked
about interactively (:mod:`turnmemory.agent.permissions` decides). The script is read with the same
grammar as the permission rules (:mod:`._grammar`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from turnmemory.agent.bash import _grammar

__all__ = ["dangerous_reason"]

_SEGMENT_SPLIT = re.compile(r"\$\(|<\(|>\(|[;&|\n(){}`]")
_BLOCK_DEVICE = re.compile(r"/dev/(?:sd|hd|nvme|xvd|vd|disk|mmcblk|dm-)")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_SCRIPT_INTERPRETERS = frozenset({"python", "perl", "ruby", "node"})
_MAX_DEPTH = 4
_MAX_CHECKED_BYTES = 200_000
_MAX_WORDS = 1000
"""Longer scripts and commands are dangerous: checking them would take too long, so they are asked about."""
_ALWAYS = {
    "sudo": "runs as another user",
    "doas": "runs as another user",
    "mkfs": "formats a file system",
    "fdisk": "edits partitions",
    "wipefs": "wipes file system signatures",
    "shutdown": "shuts the machine down",
    "reboot": "reboots the machine",
    "halt": "halts the machine",
    "poweroff": "powers the machine off",
}


def dangerous_reason(command: str) -> str | None:
    """Why ``command`` is dangerous (``"recursive force delete"``...), or ``None``.

    Reads the script with the same bash grammar as the rules and looks at every command in it, at
    any depth: in pipelines, substitutions, subshells, functions, and inside quoted arguments,
    heredocs and ``sh -c`` / ``eval`` texts, so it errs on the side of asking: ``echo "rm -rf x"`` is
    flagged too. What it cannot see into (a program name, ``eval`` or ``sh -c`` text computed at run
    time) is dangerous; a script that does not parse is also split crudely at every separator.
    """
    return _dangerous(command, 0)


def _dangerous(command: str, depth: int) -> str | None:
    if len(command) > _MAX_CHECKED_BYTES:
        return "a script too long to check"
    found = _grammar.survey(command)
    for pipeline in found.pipelines:
        for index, words in enumerate(pipeline):
            if _program_names(words) & _DOWNLOADERS:
                later = set().union(*(_program_names(after) for after in pipeline[index + 1 :]))
                if later & _grammar.SHELLS:
                    return "downloaded script piped into a shell"
                if later & _SCRIPT_INTERPRETERS:
                    return "downloaded script piped into an interpreter"
    for words, inner in found.nested:
        if inner in _DOWNLOADERS and _program_names(words) & _grammar.SHELLS:
            return "shell running a downloaded script"
    if found.recursive:
        return "fork bomb"
    if any(_BLOCK_DEVICE.match(target) for target in found.writes):
        return "write to a block device"
    commands = found.commands if found.complete else [*found.commands, *_crude_segments(command)]
    for words in commands:
        if len(words) > _MAX_WORDS:
            return "a command too long to check"
        looks: dict[str, int] = {}
        for index, word in enumerate(words):
            name = os.path.basename(word)
            if not (name in _CHECKED or name.startswith("mkfs.")):
                continue
            # A later occurrence sees fewer arguments, so one look per program suffices (linear time);
            # git's reasons depend on the subcommand after it, so it gets a few.
            looks[name] = looks.get(name, 0) + 1
            if looks[name] > (8 if name == "git" else 1):
                continue
            reason = _word_reason(name, list(words[index + 1 :]))
            if reason:
                return reason
    if found.computed and depth == 0:
        return found.computed[0]
    if depth < _MAX_DEPTH:
        for text in found.texts:
            reason = _dangerous(text, depth + 1)
            if reason:
                return reason
    return None


def _program_names(words: Sequence[str]) -> set[str]:
    return {_grammar.program_name(word) for word in words}


def _crude_segments(command: str) -> list[tuple[str, ...]]:
    unquoted = command.replace('"', " ").replace("'", " ").replace("\\", "")
    return [tuple(segment.split()) for segment in _SEGMENT_SPLIT.split(unquoted)]


_CHECKED = frozenset({*_ALWAYS, "rm", "chmod", "dd", "find", "git"})
"""The programs :func:`_word_reason` knows."""


def _word_reason(name: str, rest: list[str]) -> str | None:
    if name in _ALWAYS:
        return _ALWAYS[name]
    if name.startswith("mkfs."):
        return _ALWAYS["mkfs"]
    flags = _short_flags(rest)
    if name == "rm" and _has(flags, rest, "rR", "--recursive") and _has(flags, rest, "f", "--force"):
        return "recursive force delete"
    if (
        name == "chmod"
        and _has(flags, rest, "R", "--recursive")
        and {"777", "0777", "a+rwx", "ugo+rwx"} & set(rest)
    ):
        return "recursive world-writable permissions"
    if name == "dd" and any(arg.startswith("of=/dev/") for arg in rest):
        return "raw write to a device"
    if name == "find" and ("-delete" in rest or any(arg in ("rm", "/bin/rm") for arg in rest)):
        return "find that deletes files"
    if name == "git":
        return _git_reason(rest)
    return None


def _git_reason(rest: list[str]) -> str | None:
    words = [word for word in rest if not word.startswith("-")]
    if not words:
        return None
    sub, args = words[0], rest[rest.index(words[0]) + 1 :]
    flags = _short_flags(args)
    if sub == "push" and (
        _has(flags, args, "f", "--force")
        or "--force-with-lease" in args
        or any(a.startswith("+") for a in args)
    ):
        return "force push"
    if sub == "reset" and "--hard" in args:
        return "hard reset discards changes"
    if sub == "clean" and _has(flags, args, "f", "--force"):
        return "git clean deletes untracked files"
    if sub == "checkout" and ("--" in args or "." in args):
        return "checkout discards working-tree changes"
    if sub == "branch" and ("-D" in args or ("--delete" in args and "--force" in args)):
        return "force-deletes a branch"
    return None


def _short_flags(words: Sequence[str]) -> str:
    return "".join(word[1:] for word in words if word.startswith("-") and not word.startswith("--"))


def _has(flags: str, words: Sequence[str], letters: str, long: str) -> bool:
    return any(letter in flags for letter in letters) or any(word.startswith(long) for word in words)
