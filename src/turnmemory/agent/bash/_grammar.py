"""Bash scripts as the shell reads them (tree-sitter-bash): which are plain, and every command they hold.

A script is *plain* when it parses completely into simple commands of literal words joined by ``&&``,
``||``, ``;``, ``|`` or newlines (comments ignored), where nothing is computed at run time: no
substitution, expansion, assignment, subshell, group, function, control flow or background job, and
no heredoc or pipe feeding code to an interpreter. Redirection targets are reported for the caller to
check against the workspace. :func:`survey` walks every command of any script, plain or not, for the
dangerous-command classifier.

The parser is created on first use: loading tree-sitter costs start-up time that most runs never need.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = [
    "DEV_TARGETS",
    "INTERPRETERS",
    "SHELLS",
    "Script",
    "SimpleCommand",
    "Survey",
    "code_source",
    "command_text",
    "parse_plain",
    "prefix",
    "program_name",
    "survey",
]

MAX_SCRIPT_BYTES = 100_000
"""Longer scripts are never plain (nobody reviews them, and every rule check parses them)."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
INTERPRETERS = SHELLS | {
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "irb",
    "perl",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "Rscript",
    "R",
    "julia",
    "osascript",
    "pwsh",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
}
"""Programs that run code: the script (or inline code) they are given is what a rule grants."""

DEV_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
"""Redirection targets outside the workspace that are always fine."""

_SUBCOMMAND_TOOLS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "helm", "pip", "pip3",
        "uv", "poetry", "pdm", "hatch", "make", "gh", "dotnet", "mvn", "gradle", "gradlew", "bundle", "gem",
        "rustup", "terraform", "conda", "mamba", "brew", "apt", "apt-get", "tox", "nox", "just", "rake",
        "mix", "composer", "systemctl", "aws", "gcloud", "az", "pre-commit", "swift",
    }
)  # fmt: skip
_RUNNER_SUBCOMMANDS = frozenset({"run", "exec", "x", "dlx", "run-script", "tool"})
_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx"})
_EXACT_ONLY = frozenset(
    {
        "sudo", "doas", "su", "env", "command", "builtin", "exec", "eval", "source", ".", "nohup", "time",
        "timeout", "nice", "ionice", "watch", "strace", "ltrace", "stdbuf", "setsid", "chroot", "unshare",
        "nsenter", "ssh", "parallel", "script", "flock", "fakeroot", "xargs", "trap", "alias",
    }
)  # fmt: skip
"""Programs that run another command given as their arguments: only the exact command can be granted
(what a prefix of any other program covers is decided by :mod:`._programs`)."""
_CD = frozenset({"cd", "pushd", "popd"})
_LOOSE_BYTES = 512
_CONTEXT = 8
_MAX_PREFIX_WORDS = 200
"""Longer commands are granted exactly (and runners nested in runners stay shallow)."""
_INLINE_FLAGS = frozenset({"--eval", "--print", "-p", "-r", "--command", "-Command", "--exec"})
_VALUE_FLAGS = frozenset({"-W", "-X", "-I", "--require"})
_DUP_OPERATORS = frozenset({">&", "<&"})
_BRACE = re.compile(r"\{[^{}\0]*(?:,|\.\.)[^{}\0]*\}")

_NOT_PLAIN: dict[str, str] = {
    "command_substitution": "command substitution",
    "process_substitution": "process substitution",
    "simple_expansion": "a variable expansion",
    "expansion": "a variable expansion",
    "arithmetic_expansion": "arithmetic expansion",
    "brace_expression": "brace expansion",
    "ansi_c_string": "an ANSI-C quoted string",
    "translated_string": "a locale-translated string",
    "variable_assignment": "a variable assignment",
    "variable_assignments": "a variable assignment",
    "subshell": "a subshell",
    "compound_statement": "a { } group",
    "function_definition": "a function definition",
    "if_statement": "control flow (if)",
    "while_statement": "control flow (while)",
    "for_statement": "control flow (for)",
    "c_style_for_statement": "control flow (for)",
    "case_statement": "control flow (case)",
    "negated_command": "a negated command",
    "test_command": "a test expression",
    "declaration_command": "a declaration (export, declare, local...)",
    "unset_command": "unset",
}


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its words after quote removal, the targets of its redirections, and the
    indices of the words that hold a wildcard the shell expands into file names."""

    words: tuple[str, ...]
    targets: tuple[str, ...] = ()
    globbed: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        """The command as rules match it: see :func:`command_text`."""
        return command_text(self.words)


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed script: its simple commands and redirection targets, or why it is not plain."""

    commands: tuple[SimpleCommand, ...] = ()
    targets: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(slots=True)
class Survey:
    """Everything a script holds, plain or not, for the dangerous-command classifier.

    ``commands`` are the word lists of every command at any depth (words that are not literal keep
    their source text); ``pipelines`` the word lists of each pipeline in order; ``nested`` pairs a
    command's words with a program run inside its arguments (a substitution); ``writes`` output redirection
    targets; ``recursive`` the functions that call themselves; ``texts`` quoted arguments, heredoc
    bodies and here-strings that may hold code; ``computed`` what runs code nobody can read before it
    runs (a program name, or ``eval`` / ``sh -c`` text, built at run time); ``complete`` whether the
    script parsed without error.
    """

    commands: list[tuple[str, ...]] = field(default_factory=list)
    pipelines: list[list[tuple[str, ...]]] = field(default_factory=list)
    nested: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    recursive: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    computed: list[str] = field(default_factory=list)
    complete: bool = True


class _NotPlain(Exception):
    """Why a script is not plain (internal)."""


_parser: Parser | None = None
_parser_lock = threading.Lock()


def _parse(script: str) -> Node:
    global _parser
    with _parser_lock:
        if _parser is None:
            import tree_sitter_bash
            from tree_sitter import Language, Parser

            _parser = Parser(Language(tree_sitter_bash.language()))
        return _parser.parse(script.encode("utf-8")).root_node


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _valid(script: str) -> bool:
    try:
        script.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as JSON can carry
        return False
    return True


def program_name(word: str) -> str:
    """A program word as the tables know it: its basename, with Python's version suffix dropped."""
    name = os.path.basename(word)
    return re.sub(r"^(python|pypy)[\d.]*$", r"\1", name)


def command_text(words: Sequence[str]) -> str:
    """Words joined by spaces; a word that holds whitespace or is empty is single-quoted, so a rule
    can never mistake one word for several."""
    return " ".join(
        word if word and not any(ch.isspace() for ch in word) else "'" + word.replace("'", "'\\''") + "'"
        for word in words
    )


# -- literal words --------------------------------------------------------------------------------


def _unquoted(text: str) -> tuple[str, str]:
    """An unquoted word's value and a mask: ``u`` where a character is active, ``q`` where escaped."""
    value, mask, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                value.append(text[index + 1])
                mask.append("q")
            index += 2
            continue
        value.append(char)
        mask.append("u")
        index += 1
    return "".join(value), "".join(mask)


def _double_quoted(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _literal(node: Node) -> tuple[str, str] | None:
    """A word node's value and mask (see :func:`_unquoted`), or ``None`` when it is not literal."""
    kind = node.type
    if kind in ("word", "number"):
        return _unquoted(_text(node))
    if kind == "raw_string":
        value = _text(node)[1:-1]
        return value, "q" * len(value)
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == "string_content":
                parts.append(_double_quoted(_text(child)))
            elif child.is_named or child.type != '"':
                return None
        value = "".join(parts)
        return value, "q" * len(value)
    if kind == "concatenation":
        values, masks = [], []
        for child in node.children:
            part = _literal(child)
            if part is None:
                return None
            values.append(part[0])
            masks.append(part[1])
        return "".join(values), "".join(masks)
    return None


def _plain_word(node: Node, *, program: bool = False) -> str:
    return _plain_glob(node, program=program)[0]


def _plain_glob(node: Node, *, program: bool = False) -> tuple[str, bool]:
    """A literal word's value, and whether it holds a wildcard the shell expands (unquoted ``*?[``)."""
    part = _literal(node)
    if part is None:
        raise _NotPlain(_reason(node))
    value, mask = part
    active = "".join(ch if flag == "u" else "\0" for ch, flag in zip(value, mask, strict=True))
    if _BRACE.search(active):
        raise _NotPlain("brace expansion")
    globbed = any(ch in "*?[" for ch in active)
    if program and globbed:
        raise _NotPlain("a program name with wildcards")
    return value, globbed


def _reason(node: Node) -> str:
    for inner in _walk(node):
        if inner.type in _NOT_PLAIN:
            return _NOT_PLAIN[inner.type]
    return _NOT_PLAIN.get(node.type, f"shell syntax the checker does not accept ({node.type})")


def _walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (itself first), without recursion (scripts can nest deeply)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


# -- plain scripts --------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def parse_plain(script: str) -> Script:
    """``script`` as plain simple commands, or a :class:`Script` whose ``problem`` says why it is not."""
    if not _valid(script):
        return Script(problem="the script is not valid text (a lone surrogate)")
    if len(script.encode("utf-8")) > MAX_SCRIPT_BYTES:
        return Script(problem="the script is too long to check")
    if "\0" in script:
        return Script(problem="the script holds a NUL character")
    root = _parse(script)
    if root.has_error:
        return Script(problem="it does not parse completely as bash")
    builder = _PlainBuilder()
    try:
        builder.statements(root)
        if not builder.commands:
            raise _NotPlain("it holds no command")
        programs = {program_name(command.words[0]) for command in builder.commands}
        if programs & _CD and any(not os.path.isabs(t) and t not in DEV_TARGETS for t in builder.targets):
            raise _NotPlain("a redirection relative to a changed directory")
    except _NotPlain as why:
        return Script(problem=str(why))
    except RecursionError:
        return Script(problem="it nests too deeply to check")
    return Script(commands=tuple(builder.commands), targets=tuple(builder.targets))


class _PlainBuilder:
    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.targets: list[str] = []
        self._last: tuple[Node, Sequence[Node], bool] | None = None

    def statements(self, node: Node, *, piped: bool = False) -> None:
        """A program or list: statements joined by ``;``, newlines, ``&&`` and ``||``.

        Lists nest one level per operator (``a && b && c``), so they are flattened without recursion.
        The grammar can hang a list inside a pipeline (``a | b | c && d`` as ``a | (b | c && d)``):
        every command of such a list counts as reading the pipe (``piped``), whichever it is."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type not in ("program", "list"):
                self.part(current, piped=piped)
                continue
            children = [c for c in current.children if c.type not in ("comment", ";", "&&", "||")]
            if any(child.type == "&" for child in children):
                raise _NotPlain("a command run in the background (&)")
            stack.extend(reversed(children))

    def part(self, node: Node, *, piped: bool) -> None:
        if node.type == "list":
            self.statements(node, piped=piped)
        elif node.type == "pipeline":
            first = True
            for child in node.children:
                if child.type not in ("|", "|&"):
                    self.part(child, piped=piped or not first)
                    first = False
        elif node.type == "command":
            self.command(node, (), piped=piped)
        elif node.type == "redirected_statement" and node.children:
            body, redirects = node.children[0], node.children[1:]
            if body.type == "command":
                self.command(body, redirects, piped=piped)
                return
            # The grammar hangs the redirections of a list's or pipeline's last command on the whole.
            self.part(body, piped=piped)
            assert self._last is not None
            last, earlier, was_piped = self._last
            self.commands.pop()
            self.command(last, [*earlier, *redirects], piped=was_piped)
        else:
            raise _NotPlain(_NOT_PLAIN.get(node.type) or _reason(node))

    def command(self, node: Node, redirects: Sequence[Node], *, piped: bool) -> None:
        words: list[str] = []
        globbed: list[int] = []
        fed = piped
        first_target = len(self.targets)
        for child in [*node.children, *redirects]:
            if child.type == "command_name":
                words.append(_plain_word(child.children[0], program=True) if child.children else "")
            elif child.type in ("word", "number", "string", "raw_string", "concatenation"):
                word, glob = _plain_glob(child)
                if glob:
                    globbed.append(len(words))
                words.append(word)
            elif child.type == "file_redirect":
                fed |= self.file_redirect(child, words)
            elif child.type == "heredoc_redirect":
                self.heredoc(child, words)
                fed = True
            elif child.type == "herestring_redirect":
                for part in child.children[1:]:
                    _plain_word(part)
                fed = True
            else:
                raise _NotPlain(_reason(child))
        if not words or not words[0]:
            raise _NotPlain("a command without a program name")
        if fed and program_name(words[0]) in INTERPRETERS and code_source(words)[0] == "stdin":
            raise _NotPlain(f"code fed to the interpreter {words[0]} through its standard input")
        self.commands.append(SimpleCommand(tuple(words), tuple(self.targets[first_target:]), tuple(globbed)))
        self._last = (node, redirects, piped)

    def file_redirect(self, node: Node, words: list[str]) -> bool:
        """Record the target; words after it are the command's arguments. Whether it feeds stdin."""
        operator = ""
        destinations: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                continue
            if not child.is_named:
                operator = child.type
            else:
                destinations.append(child)
        if not destinations:
            return False  # closes a descriptor: >&-
        target = _plain_word(destinations[0])
        if not (operator in _DUP_OPERATORS and re.fullmatch(r"\d+-?|-", target)):
            if any(ch in "*?[" for ch in target):
                raise _NotPlain("a redirection target with wildcards")
            if target.startswith("~") and not target.startswith("~/") and target != "~":
                raise _NotPlain("a redirection target under another directory's tilde (~user, ~-, ~+)")
            self.targets.append(target)
        words.extend(_plain_word(extra) for extra in destinations[1:])
        return operator.startswith("<") and operator not in ("<&",)

    def heredoc(self, node: Node, words: list[str]) -> None:
        for child in node.children:
            if child.type in ("<<", "<<-", "heredoc_start", "heredoc_end"):
                continue
            if child.type == "heredoc_body":
                if any(part.type != "heredoc_content" for part in child.children):
                    raise _NotPlain(f"a heredoc with {_reason(child)}")
            elif child.type == "file_redirect":
                self.file_redirect(child, words)
            else:
                raise _NotPlain("more commands on the line of a heredoc")


# -- code sources and grant prefixes --------------------------------------------------------------


def code_source(words: Sequence[str]) -> tuple[str, int]:
    """Where an interpreter command takes its code: ``("script", i)`` (the script or module is
    ``words[i]``), ``("inline", i)`` (code in the arguments, from ``words[i]`` on) or ``("stdin", n)``."""
    index = 1
    while index < len(words):
        word = words[index]
        if word == "-":
            return "stdin", len(words)
        if word == "-m" and index + 1 < len(words):
            return "script", index + 1
        if word.partition("=")[0] in _INLINE_FLAGS or (
            word.startswith("-") and not word.startswith("--") and ("c" in word or "e" in word)
        ):
            return "inline", index
        if word in _VALUE_FLAGS:
            index += 2
            continue
        if not word.startswith("-"):
            return "script", index
        index += 1
    return "stdin", len(words)


def prefix(words: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """The part of a command a session grant covers, and whether any further words are allowed.

    Program and subcommand for tools with subcommands (``git status``, ``npm run test``), the script
    for interpreters (``python3 app.py``), the program alone otherwise; the exact command for
    programs that run other commands, inline code, and anything with flags before its subcommand.
    """
    exact = (tuple(words), False)
    name = program_name(words[0])
    if name in _EXACT_ONLY or len(words) > _MAX_PREFIX_WORDS:
        return exact
    if name in INTERPRETERS:
        kind, index = code_source(words)
        return (tuple(words[: index + 1]), True) if kind == "script" else exact
    if name in _RUNNERS:
        return _run_prefix(words, 1)
    if name in _SUBCOMMAND_TOOLS:
        if len(words) < 2 or words[1].startswith("-"):
            return exact
        if words[1] in _RUNNER_SUBCOMMANDS:
            return _run_prefix(words, 2)
        return tuple(words[:2]), True
    return (words[0],), True


def _run_prefix(words: Sequence[str], start: int) -> tuple[tuple[str, ...], bool]:
    """``npx eslint``, ``uv run python app.py``: the runner and the prefix of the command it runs."""
    if len(words) <= start or words[start].startswith("-"):
        return tuple(words), False
    inner, more = prefix(words[start:])
    return (*words[:start], *inner), more


# -- the survey (dangerous commands) --------------------------------------------------------------


def _loose(node: Node) -> str:
    part = _literal(node)
    if part is not None:
        return part[0]
    if node.end_byte - node.start_byte > _LOOSE_BYTES:
        return "<computed>"  # the commands inside are surveyed on their own
    return _text(node).replace('"', "").replace("'", "").replace("\\", "")


@lru_cache(maxsize=512)
def survey(script: str) -> Survey:
    """Every command, pipeline, write and code-bearing text of ``script`` (see :class:`Survey`)."""
    text = script if _valid(script) else script.encode("utf-8", "replace").decode("utf-8")
    root = _parse(text.replace("\0", " "))
    found = Survey(complete=not root.has_error)
    # Each node carries the nearest enclosing commands and function names (a few: deep nesting stays linear).
    stack: list[tuple[Node, tuple[tuple[str, ...], ...], tuple[str, ...]]] = [(root, (), ())]
    while stack:
        node, outers, functions = stack.pop()
        if node.type == "command":
            words = _command_words(node)
            found.commands.append(words)
            computed = _computed(node, words)
            if computed:
                found.computed.append(computed)
            found.nested.extend((outer, program_name(words[0])) for outer in outers)
            if words[0] in functions:
                found.recursive.append(words[0])
            for arg in node.children:
                if arg.type in ("string", "raw_string", "concatenation", "word"):
                    value = _loose(arg)
                    if any(ch.isspace() or ch in ";|&" for ch in value):
                        found.texts.append(value)
            outers = (words, *outers)[:_CONTEXT]
        elif node.type == "function_definition":
            name = next((_text(c) for c in node.children if c.type == "word"), "")
            functions = (name, *functions)[:_CONTEXT]
        elif node.type == "pipeline":
            found.pipelines.append([_command_words(c) for c in node.children if c.type == "command"])
        elif node.type == "file_redirect":
            operator = next((c.type for c in node.children if not c.is_named), "")
            targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
            if ">" in operator and targets:
                found.writes.append(_loose(targets[0]))
        elif node.type in ("heredoc_body", "herestring_redirect"):
            found.texts.append(_text(node).removeprefix("<<<").strip().strip("'\""))
        stack.extend((child, outers, functions) for child in reversed(node.children))
    return found


def _computed(node: Node, words: tuple[str, ...]) -> str | None:
    name = next((c for c in node.children if c.type == "command_name"), None)
    if name is None or not name.children or _literal(name.children[0]) is None:
        return "a program name computed at run time"
    program = program_name(words[0])
    arguments = [c for c in node.children if c.is_named and c.type not in ("command_name", "file_redirect")]
    runs_text = program in ("eval", "source", ".") or (program in SHELLS and "-c" in words)
    if runs_text and any(_literal(argument) is None for argument in arguments):
        return f"{program} of text computed at run time"
    return None


def _command_words(node: Node) -> tuple[str, ...]:
    words: list[str] = []
    for child in node.children:
        if child.type == "command_name":
            words.extend(_loose(c) for c in child.children)
        elif child.is_named and child.type not in ("variable_assignment", "file_redirect", "comment"):
            words.append(_loose(child))
    return tuple(words) or ("",)
