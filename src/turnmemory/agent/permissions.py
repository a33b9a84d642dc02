"""Who may do what: access requests, allow rules, the dangerous-command classifier, the decision.

Every tool call states the access it needs (:class:`Access`). Reads inside the workspace are granted
outright; everything else is granted by an allow rule (``--allow``, ``[permissions] allow``), by an
earlier "allow for this session" answer, or by asking. Without a way to ask (headless) the answer is
a denial whose reason tells the model, and the user, which rule would have allowed it.

Rules are ``KIND`` or ``KIND:PATTERN`` (shell-style wildcards):

- ``read``, ``write``, ``edit`` with an optional path pattern (relative patterns match
  workspace-relative paths, absolute ones absolute paths). A bare ``write`` or ``edit`` covers the
  workspace only: writing outside it needs a pattern that names the path.
- ``bash`` with an optional command pattern (``bash:git *``; a pattern ending in `` *`` also matches
  the command without arguments). A script matches the bash patterns only when it is plain (parsed
  by a real bash grammar into literal simple commands joined by ``&&``, ``||``, ``;``, ``|`` or
  newlines, redirected only into the workspace or ``/dev/null``: see :mod:`._bash`) and each of its
  simple commands matches one of them. Anything else needs a bare ``bash`` rule or a person's answer.
- ``web`` with an optional host pattern, ``mcp`` with an optional ``server`` or ``server/tool`` pattern.
- ``all``: every kind without a pattern. ``dangerous``: lifts the refusal of dangerous commands
  (they still need a ``bash`` rule). Interactively a dangerous command is always asked about, even
  when bash is allowed for the session, unless ``dangerous`` is allowed explicitly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from turnmemory._text import terminal_safe
from turnmemory.agent import _bash

__all__ = [
    "KINDS",
    "Access",
    "AccessKind",
    "Answer",
    "Asker",
    "Decision",
    "Permissions",
    "Rule",
    "dangerous_reason",
    "parse_rule",
    "parse_rules",
    "plain_problem",
    "resolve_path",
    "session_scope",
]

AccessKind = Literal["read", "write", "edit", "bash", "web", "mcp"]
KINDS: tuple[AccessKind, ...] = ("read", "write", "edit", "bash", "web", "mcp")
_PATH_KINDS = ("read", "write", "edit")


@dataclass(frozen=True, slots=True)
class Access:
    """What one tool call needs: a kind and its subject.

    ``subject`` is an absolute real path (read/write/edit), a command (bash), a host (web) or
    ``server/tool`` (mcp). ``outside`` marks a path outside the workspace; ``dangerous`` says why a
    command is dangerous. ``contained`` marks a command that runs inside the OS sandbox;
    ``escalation`` is the model's reason for running one outside it. ``attachment`` marks the user's own
    ``@path`` (no model reads why it was denied).
    """

    kind: AccessKind
    subject: str
    outside: bool = False
    dangerous: str | None = None
    contained: bool = False
    escalation: str | None = None
    attachment: bool = False

    def summary(self) -> str:
        """One line for a prompt or a log: ``bash: git status``, ``write (outside the workspace): /x``.

        What a terminal acts on in the subject and the model's escalation reason is shown escaped
        (``\\n``, ``\\x1b``), so a multi-line script cannot hide its later lines, nor an escape
        sequence conceal or rewrite the prompt."""
        label: str = self.kind
        if self.outside:
            label += " (outside the workspace)"
        if self.dangerous:
            label += f" (dangerous: {self.dangerous})"
        if self.escalation:
            label += f" (outside the sandbox: {_visible(self.escalation)})"
        return f"{label}: {_visible(self.subject)}"


def _visible(text: str) -> str:
    return terminal_safe(text, multiline=False)


@dataclass(frozen=True, slots=True)
class Rule:
    """One allow rule: a kind (``all`` and ``dangerous`` included) and an optional pattern."""

    kind: str
    pattern: str | None = None

    def __str__(self) -> str:
        return self.kind if self.pattern is None else f"{self.kind}:{self.pattern}"

    def allows(self, access: Access, workspace: str) -> bool:
        """Whether this rule grants ``access`` (the dangerous refusal is checked separately)."""
        if self.kind == "all":
            return not (access.outside and access.kind in ("write", "edit"))
        if self.kind != access.kind:
            return False
        if self.pattern is None:
            return not (access.outside and access.kind in ("write", "edit"))
        if access.kind in _PATH_KINDS:
            return _path_matches(self.pattern, access.subject, workspace)
        if access.kind == "bash":
            return _bash_covered(access.subject, workspace, [self.pattern])
        if access.kind == "mcp":
            pattern = self.pattern if "/" in self.pattern else self.pattern + "/*"
            return fnmatchcase(access.subject, pattern)
        return fnmatchcase(access.subject, self.pattern)


def _path_matches(pattern: str, path: str, workspace: str) -> bool:
    if os.path.isabs(pattern):
        return fnmatchcase(path, os.path.normpath(pattern))
    prefix = workspace.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return False
    return fnmatchcase(path[len(prefix) :], os.path.normpath(pattern))


def parse_rule(text: str) -> Rule:
    """Parse ``KIND`` or ``KIND:PATTERN``; a ``ValueError`` says what is wrong in one line."""
    kind, sep, pattern = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in (*KINDS, "all", "dangerous"):
        raise ValueError(
            f"unknown permission rule {text!r}: expected one of {', '.join((*KINDS, 'all', 'dangerous'))}, "
            "optionally followed by :PATTERN"
        )
    if not sep:
        return Rule(kind)
    if kind in ("all", "dangerous"):
        raise ValueError(f"permission rule {text!r}: {kind!r} takes no pattern")
    if not pattern.strip():
        raise ValueError(f"permission rule {text!r}: empty pattern after ':'")
    return Rule(kind, pattern.strip())


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    """Parse several rules (see :func:`parse_rule`)."""
    return tuple(parse_rule(text) for text in texts)


def resolve_path(raw: str, workspace: str) -> tuple[str, bool]:
    """``raw`` resolved against ``workspace`` (symlinks and ``..`` followed): ``(real path, inside)``.

    ``workspace`` must already be a real absolute path. A path whose real location leaves the
    workspace, through ``..`` or a symlink, is outside.
    """
    path = os.path.expanduser(raw.strip())
    if not os.path.isabs(path):
        path = os.path.join(workspace, path)
    real = os.path.realpath(path)
    inside = real == workspace or real.startswith(workspace.rstrip(os.sep) + os.sep)
    return real, inside


# -- the dangerous-command classifier -------------------------------------------------------------

_SEGMENT_SPLIT = re.compile(r"\$\(|<\(|>\(|[;&|\n(){}`]")
_BLOCK_DEVICE = re.compile(r"/dev/(?:sd|hd|nvme|xvd|vd|disk|mmcblk|dm-)")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_SCRIPT_INTERPRETERS = frozenset({"python", "perl", "ruby", "node"})
_MAX_DEPTH = 4
_MAX_CHECKED_BYTES = 200_000
_MAX_WORDS = 1000
"""Longer scripts and commands are dangerous: checking them would take too long, so they are asked about."""
_SHOWN = 300
"""The most of a subject a refusal repeats."""
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
    found = _bash.survey(command)
    for pipeline in found.pipelines:
        for index, words in enumerate(pipeline):
            if _programs(words) & _DOWNLOADERS:
                later = set().union(*(_programs(after) for after in pipeline[index + 1 :]))
                if later & _bash.SHELLS:
                    return "downloaded script piped into a shell"
                if later & _SCRIPT_INTERPRETERS:
                    return "downloaded script piped into an interpreter"
    for words, inner in found.nested:
        if inner in _DOWNLOADERS and _programs(words) & _bash.SHELLS:
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


def _programs(words: Sequence[str]) -> set[str]:
    return {_bash.program_name(word) for word in words}


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


# -- plain scripts and session scopes ------------------------------------------------------------


def plain_problem(command: str, workspace: str) -> str | None:
    """Why the bash script ``command`` is not plain, or ``None`` (see :mod:`._bash`): only a plain
    script can match a bash rule's pattern or get a session grant. Redirection targets must resolve
    inside ``workspace`` (or be ``/dev/null``)."""
    script = _bash.parse_plain(command)
    if script.problem is not None:
        return script.problem
    for target in script.targets:
        if target not in _bash.DEV_TARGETS and not resolve_path(target, workspace)[1]:
            return f"a redirection outside the workspace ({_visible(target)})"
    return None


def _command_matches(pattern: str, text: str) -> bool:
    return fnmatchcase(text, pattern) or (pattern.endswith(" *") and fnmatchcase(text, pattern[:-2]))


def _unmatched(command: str, patterns: Sequence[str]) -> list[_bash.SimpleCommand]:
    """The simple commands of a plain script that no pattern matches."""
    return [
        simple
        for simple in _bash.parse_plain(command).commands
        if not any(_command_matches(pattern, simple.text) for pattern in patterns)
    ]


def _bash_covered(command: str, workspace: str, patterns: Sequence[str]) -> bool:
    return plain_problem(command, workspace) is None and not _unmatched(command, patterns)


def _scope_rule(simple: _bash.SimpleCommand) -> Rule:
    words, more = _bash.prefix(simple.words)
    pattern = re.sub(r"([*?\[])", r"[\1]", _bash.command_text(words))
    return Rule("bash", pattern + " *" if more else pattern)


def session_scope(access: Access, workspace: str) -> tuple[Rule, ...]:
    """The rules an "allow for this session" answer adds for ``access``; none for a dangerous command
    or a bash script that is not plain (such an answer allows it once).

    A bash script grants each of its simple commands' prefix (see :func:`._bash.prefix`): ``git
    status`` grants ``git status *``, ``python3 app.py`` grants ``python3 app.py *``. An outside path
    grants itself (read: its directory), a host itself, an MCP tool its server; other accesses their
    kind, which covers the workspace only.
    """
    if access.dangerous is not None:
        return ()
    if access.kind == "bash":
        if plain_problem(access.subject, workspace) is not None:
            return ()
        rules = [_scope_rule(simple) for simple in _bash.parse_plain(access.subject).commands]
        return tuple(dict.fromkeys(rules))
    if access.kind in _PATH_KINDS and access.outside:
        pattern = (
            access.subject if access.kind != "read" else os.path.join(os.path.dirname(access.subject), "*")
        )
        return (Rule(access.kind, pattern),)
    if access.kind == "web":
        return (Rule("web", access.subject),)
    if access.kind == "mcp":
        return (Rule("mcp", access.subject.partition("/")[0]),)
    return (Rule(access.kind),)


# -- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome for one access: ``how`` it was granted or why not (``reason``, shown to the model)."""

    allowed: bool
    how: Literal["auto", "rule", "session", "once", "deny", "refused"]
    reason: str = ""

    @property
    def label(self) -> str:
        """The decision as the turn records it: ``allow_rule``, ``allow_once``, ``deny``..."""
        return f"allow_{self.how}" if self.allowed else self.how


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to a permission prompt: ``once``, ``session`` or ``deny`` (with a reason)."""

    choice: Literal["once", "session", "deny"]
    reason: str = ""


Asker = Callable[[Access], Answer]
"""Asks a person about one access; the REPL provides one, headless runs have none."""


class Permissions:
    """Decides accesses for one session: rules, session grants, and asking when there is someone to ask.

    ``extra_readable`` are directories whose files are readable without asking (the session's spill
    directory, where truncated outputs are kept).
    """

    def __init__(
        self,
        workspace: str,
        rules: Sequence[Rule] = (),
        *,
        ask: Asker | None = None,
        extra_readable: Sequence[str] = (),
    ) -> None:
        self.workspace = workspace
        self.rules = tuple(rules)
        self.ask = ask
        self.extra_readable = tuple(os.path.realpath(path) for path in extra_readable)
        self.session_rules: list[Rule] = []

    def decide(self, access: Access) -> Decision:
        """Grant or deny ``access``, asking when needed and possible."""
        if access.kind == "read" and (not access.outside or self._extra_readable(access.subject)):
            return Decision(True, "auto")
        if access.contained and access.dangerous is None:
            return Decision(True, "auto")
        explicit_dangerous = any(rule.kind == "dangerous" for rule in self.rules)
        by_rule = self._covered(access, self.rules)
        by_session = self._covered(access, (*self.rules, *self.session_rules))
        if access.dangerous is None or explicit_dangerous:
            if by_rule:
                return Decision(True, "rule")
            if by_session:
                return Decision(True, "session")
        if self.ask is None:
            return Decision(False, "refused", self._refusal(access, by_rule))
        answer = self.ask(access)
        if answer.choice == "deny":
            reason = answer.reason.strip() or "no reason given"
            return Decision(False, "deny", f"the user denied {access.summary()}: {reason}")
        grant = session_scope(access, self.workspace) if answer.choice == "session" else ()
        if grant:
            self.session_rules.extend(rule for rule in grant if rule not in self.session_rules)
            return Decision(True, "session")
        return Decision(True, "once")

    def _covered(self, access: Access, rules: Sequence[Rule]) -> bool:
        """Whether ``rules`` grant ``access``: one of them, or for a plain bash script several
        patterns together (one per simple command)."""
        if any(rule.allows(access, self.workspace) for rule in rules):
            return True
        patterns = [rule.pattern for rule in rules if rule.kind == "bash" and rule.pattern is not None]
        return (
            access.kind == "bash"
            and len(patterns) > 1
            and _bash_covered(access.subject, self.workspace, patterns)
        )

    def reset_session(self) -> None:
        """Forget "allow for this session" answers (a new or resumed session)."""
        self.session_rules.clear()

    def _extra_readable(self, path: str) -> bool:
        return any(path.startswith(root.rstrip(os.sep) + os.sep) for root in self.extra_readable)

    def _refusal(self, access: Access, allowed_otherwise: bool) -> str:
        if access.dangerous is not None and allowed_otherwise:
            return f"refused dangerous command ({access.dangerous}); only an explicit --allow dangerous permits it"
        if access.dangerous is not None:
            return (
                f"refused dangerous command ({access.dangerous}): it needs --allow dangerous "
                "together with a bash rule"
            )
        what = access.summary()
        what = what if len(what) <= _SHOWN else what[:_SHOWN] + "..."
        if access.kind in ("write", "edit") and access.outside:
            hint = f"rerun with --allow '{access.kind}:{access.subject}'"
        elif access.kind == "read":
            hint = f"rerun with --allow 'read:{os.path.join(os.path.dirname(access.subject), '*')}'"
        elif access.kind == "bash":
            hint = self._bash_hint(access.subject)
        else:
            hint = f"rerun with --allow {access.kind}"
        return f"not allowed without asking: {what} ({hint})"

    def _bash_hint(self, command: str) -> str:
        problem = plain_problem(command, self.workspace)
        if problem is not None:
            return f"not a plain command: {problem}; only --allow bash permits it"
        rules = (*self.rules, *self.session_rules)
        patterns = [rule.pattern for rule in rules if rule.kind == "bash" and rule.pattern is not None]
        missing = _unmatched(command, patterns)
        scopes = " ".join(f"--allow '{rule}'" for rule in dict.fromkeys(map(_scope_rule, missing)))
        unmatched = f"{_visible(missing[0].text)[:_SHOWN]} matches no bash rule; " if patterns else ""
        return f"{unmatched}rerun with {scopes} or --allow bash"
