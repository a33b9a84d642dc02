"""A program's arguments as its manual lists its options: which take a value, which run another program.

:func:`scan` splits a simple command's words into options (with their values) and operands the way
getopt_long and git's parse-options do: long options under any unique abbreviation (``--open`` for
``--open-files-in-pager``), ``--name=value`` and ``--name value``, short options bundled and glued to
their value (``-nOcmd``), options after operands, ``--`` ending them. :func:`effects` turns what an
:class:`Options` table says of them into :class:`Escape` and :class:`PathUse` records
(:mod:`._programs` holds the tables).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Escape",
    "Inspection",
    "Options",
    "PathKind",
    "PathUse",
    "Token",
    "effects",
    "given",
    "looks_like_path",
    "names",
    "operands_of",
    "option_table",
    "read_text",
    "scan",
]

PathKind = Literal["read", "write", "move"]

_MAX_READ = 1 << 20
"""The most of a file (a makefile, a sed or awk script file) read to see what it runs."""


@dataclass(frozen=True, slots=True)
class Escape:
    """Words ``start`` up to ``end`` (exclusive) that make the program run another one or work elsewhere."""

    start: int
    end: int
    reason: str
    inner: tuple[str, ...] | None = None
    """A command the program runs exactly as given (``nice make``): the patterns may cover it on its own."""


@dataclass(frozen=True, slots=True)
class PathUse:
    """The word at ``index`` may name a file the program reads, writes, or works in (``move``)."""

    index: int
    path: str
    kind: PathKind


@dataclass(frozen=True, slots=True)
class Inspection:
    """What one simple command does beyond its program's own work (see :mod:`._programs`).

    ``runs_project``: it runs the project's code (a build, tests, a script), so outside the sandbox a
    pattern covers it only while the workspace is unchanged. ``changes_files``: it may create or
    replace files (a link among them), so what later commands of the script name cannot be checked
    beforehand. ``directory``: the directory ``cd`` moves the script's later commands to.
    """

    escapes: tuple[Escape, ...] = ()
    paths: tuple[PathUse, ...] = ()
    recipes: tuple[str, ...] = ()
    runs_project: bool = False
    changes_files: bool = True
    directory: str | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """One program's options, as many of them as matter here.

    ``values`` take a value (``-f x``, ``-fx``, ``--file x``, ``--file=x``); ``optional`` ones take it
    only glued (``-i.bak``, ``--exec-path=x``). ``runs`` make the program run another program (or work
    elsewhere), with the reason; ``reads``, ``writes`` and ``moves`` take a file read, a file written
    and a place worked in. ``single_dash``: long options are spelled ``-name`` (Go's flag package).
    """

    values: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    runs: Mapping[str, str] = field(default_factory=dict)
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    moves: frozenset[str] = frozenset()
    abbreviations: bool = True
    single_dash: bool = False

    def resolve(self, name: str) -> str:
        """The long option ``--name`` stands for: itself, or the listed option it may abbreviate, one
        that runs a program first, then one naming a place or a file (a prefix the program would
        find ambiguous counts too: it does nothing worse than fail there)."""
        spelled = "--" + name
        known = [*self.runs, *self.values, *self.optional, *self.reads, *self.writes, *self.moves]
        if spelled in known or not self.abbreviations or not name:
            return spelled
        candidates = sorted({option for option in known if option.startswith(spelled)})
        for kind in (set(self.runs), self.moves, self.writes, self.reads):
            telling = [candidate for candidate in candidates if candidate in kind]
            if telling:
                return telling[0]
        return (candidates or [spelled])[0]

    def merged(self, other: Options) -> Options:
        """These options and ``other``'s (a command's own, and a family's it shares: git's diff options)."""
        return Options(
            values=self.values | other.values,
            optional=self.optional | other.optional,
            runs={**other.runs, **self.runs},
            reads=self.reads | other.reads,
            writes=self.writes | other.writes,
            moves=self.moves | other.moves,
            abbreviations=self.abbreviations,
            single_dash=self.single_dash,
        )


def names(text: str) -> frozenset[str]:
    """The space-separated names of ``text``."""
    return frozenset(text.split())


def option_table(
    values: str = "",
    *,
    optional: str = "",
    flags: str = "",
    runs: Mapping[str, str] | None = None,
    reads: str = "",
    writes: str = "",
    moves: str = "",
    abbreviations: bool = True,
    single_dash: bool = False,
) -> Options:
    """An :class:`Options` from space-separated option names; a ``runs`` key may list several, and
    takes a value unless it is listed in ``flags`` (no value) or ``optional``."""
    running = {option: reason for key, reason in (runs or {}).items() for option in key.split()}
    files = {*reads.split(), *writes.split(), *moves.split()}
    unvalued = {*flags.split(), *optional.split()}
    return Options(
        values=frozenset({*values.split(), *files, *(set(running) - unvalued)}),
        optional=frozenset(optional.split()),
        runs=running,
        reads=frozenset(reads.split()),
        writes=frozenset(writes.split()),
        moves=frozenset(moves.split()),
        abbreviations=abbreviations,
        single_dash=single_dash,
    )


@dataclass(frozen=True, slots=True)
class Token:
    """One option with its value (``option`` set), or one operand (``option`` None, the word in ``value``)."""

    start: int
    end: int
    option: str | None
    value: str | None


def scan(words: Sequence[str], start: int, options: Options, *, until_operand: bool = False) -> list[Token]:
    """The options and operands of ``words[start:]``; with ``until_operand``, up to the first operand."""
    tokens: list[Token] = []
    index, ended = start, False
    while index < len(words):
        word = words[index]
        if ended or word == "-" or not word.startswith("-"):
            tokens.append(Token(index, index + 1, None, word))
            if until_operand:
                break
            index += 1
        elif word == "--":
            ended = True
            index += 1
        elif word.startswith("--") or options.single_dash:
            if options.single_dash:
                name, eq, value = word.lstrip("-").partition("=")
                option = "-" + name
            else:
                name, eq, value = word[2:].partition("=")
                option = options.resolve(name)
            if eq:
                tokens.append(Token(index, index + 1, option, value))
                index += 1
            elif option in options.values and index + 1 < len(words):
                tokens.append(Token(index, index + 2, option, words[index + 1]))
                index += 2
            else:
                tokens.append(Token(index, index + 1, option, None))
                index += 1
        else:
            index = _short(words, index, options, tokens)
    return tokens


def _short(words: Sequence[str], index: int, options: Options, tokens: list[Token]) -> int:
    """Append the options of one bundle of short options (``-xvf name``); the index after it."""
    word = words[index]
    for at in range(1, len(word)):
        option, rest = "-" + word[at], word[at + 1 :]
        if option in options.values:
            if rest or index + 1 >= len(words):
                tokens.append(Token(index, index + 1, option, rest or None))
                return index + 1
            tokens.append(Token(index, index + 2, option, words[index + 1]))
            return index + 2
        if option in options.optional or rest[:1] in ("/", "~"):  # an unknown option's glued path
            tokens.append(Token(index, index + 1, option, rest or None))
            return index + 1
        tokens.append(Token(index, index + 1, option, None))
    return index + 1


def effects(
    tokens: Iterable[Token], options: Options, operands: PathKind | None
) -> tuple[list[Escape], list[PathUse]]:
    """The escapes and path uses of scanned tokens: ``operands`` is what an operand is (None: not a path).

    The value of an option the table does not know counts as a path like an operand: ``--output=/x``."""
    escapes: list[Escape] = []
    paths: list[PathUse] = []
    for token in tokens:
        if token.option is None:
            if operands is not None and token.value:
                paths.append(PathUse(token.start, token.value, operands))
        elif token.option in options.runs:
            escapes.append(Escape(token.start, token.end, options.runs[token.option]))
        elif token.value is None:
            continue
        elif token.option in options.moves:
            paths.append(PathUse(token.end - 1, token.value, "move"))
        elif token.option in options.reads:
            paths.append(PathUse(token.end - 1, token.value, "read"))
        elif token.option in options.writes:
            paths.append(PathUse(token.end - 1, token.value, "write"))
        elif token.option not in options.values and token.option not in options.optional:
            paths.append(PathUse(token.end - 1, token.value, operands or "write"))
    return escapes, paths


def operands_of(tokens: Iterable[Token]) -> list[Token]:
    """The operands among ``tokens``."""
    return [token for token in tokens if token.option is None]


def given(tokens: Iterable[Token], *names: str) -> list[Token]:
    """The tokens of the options ``names`` (any of their spellings, resolved by :func:`scan`)."""
    return [token for token in tokens if token.option in names]


def read_text(path: str) -> str | None:
    """A regular file's text (at most :data:`_MAX_READ` bytes), or None; never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def looks_like_path(word: str) -> bool:
    """Whether an operand that may be a name or a path (a git revision, a package) is a path."""
    return word in (".", "..") or word.startswith(("/", "~", "./", "../", "file:"))
