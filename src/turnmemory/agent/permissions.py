"""Who may do what: access requests, allow rules, the dangerous-command classifier, the decision.

Every tool call states the access it needs (:class:`Access`). Reads inside the workspace are granted
outright; everything else is granted by an allow rule (``--allow``, ``[permissions] allow``), by an
earlier "allow for this session" answer, or by asking. Without a way to ask (headless) the answer is
a denial whose reason tells the model, and the user, which rule would have allowed it.

Rules are ``KIND`` or ``KIND:PATTERN`` (shell-style wildcards):

- ``read``, ``write``, ``edit`` with an optional path pattern (relative patterns match
  workspace-relative paths, absolute ones absolute paths). A bare ``write`` or ``edit`` covers the
  workspace only: writing outside it needs a pattern that names the path.
- ``bash`` with an optional command pattern (``bash:git *``). A compound command matches a pattern
  only when every simple command in it does; command substitution never matches a pattern.
- ``web`` with an optional host pattern, ``mcp`` with an optional ``server`` or ``server/tool`` pattern.
- ``all``: every kind without a pattern. ``dangerous``: lifts the refusal of dangerous commands
  (they still need a ``bash`` rule). Interactively a dangerous command is always asked about, even
  when bash is allowed for the session, unless ``dangerous`` is allowed explicitly.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

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
    "resolve_path",
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
    ``escalation`` is the model's reason for running one outside it.
    """

    kind: AccessKind
    subject: str
    outside: bool = False
    dangerous: str | None = None
    contained: bool = False
    escalation: str | None = None

    def summary(self) -> str:
        """One line for a prompt or a log: ``bash: git status``, ``write (outside the workspace): /x``."""
        label: str = self.kind
        if self.outside:
            label += " (outside the workspace)"
        if self.dangerous:
            label += f" (dangerous: {self.dangerous})"
        if self.escalation:
            label += f" (outside the sandbox: {self.escalation})"
        return f"{label}: {self.subject}"


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
            commands = simple_commands(access.subject)
            return bool(commands) and all(fnmatchcase(command, self.pattern) for command in commands)
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
_RAW_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:env\s+)?(?:ba|z|k|da|fi)?sh\b"),
        "downloaded script piped into a shell",
    ),
    (
        re.compile(r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:python3?|perl|ruby|node)\b"),
        "downloaded script piped into an interpreter",
    ),
    (
        re.compile(r"\b(?:ba|z|k|da)?sh\b[^;&|]*(?:\$\(|<\(|`)\s*(?:curl|wget)\b"),
        "shell running a downloaded script",
    ),
    (re.compile(r"(\S+)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1"), "fork bomb"),
    (re.compile(r">{1,2}\s*/dev/(?:sd|hd|nvme|xvd|vd|disk|mmcblk|dm-)"), "write to a block device"),
)
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

    Looks at every simple command, including those inside quotes, substitutions and ``sh -c``, so it
    errs on the side of asking: ``echo "rm -rf x"`` is flagged too.
    """
    for pattern, why in _RAW_PATTERNS:
        if pattern.search(command):
            return why
    unquoted = command.replace('"', " ").replace("'", " ").replace("\\", "")
    for segment in _SEGMENT_SPLIT.split(unquoted):
        words = segment.split()
        for index, word in enumerate(words):
            reason = _word_reason(os.path.basename(word), words[index + 1 :])
            if reason:
                return reason
    return None


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


def simple_commands(command: str) -> list[str]:
    """The simple commands of a compound command, each re-joined from its words.

    ``[]`` when the command cannot be split safely (unbalanced quotes, command substitution).
    """
    if "$(" in command or "`" in command or "<(" in command or ">(" in command:
        return []
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    commands: list[str] = []
    words: list[str] = []
    try:
        for token in lexer:
            if token and set(token) <= set(";&|"):
                if words:
                    commands.append(" ".join(words))
                words = []
            else:
                words.append(token)
    except ValueError:
        return []
    if words:
        commands.append(" ".join(words))
    return commands


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
        by_rule = any(rule.allows(access, self.workspace) for rule in self.rules)
        by_session = any(rule.allows(access, self.workspace) for rule in self.session_rules)
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
        if answer.choice == "session" and access.dangerous is None:
            self.session_rules.append(self.session_rule(access))
            return Decision(True, "session")
        return Decision(True, "once")

    def session_rule(self, access: Access) -> Rule:
        """The rule an "allow for this session" answer adds for ``access``."""
        if access.kind in _PATH_KINDS and access.outside:
            pattern = (
                access.subject
                if access.kind != "read"
                else os.path.join(os.path.dirname(access.subject), "*")
            )
            return Rule(access.kind, pattern)
        if access.kind == "web":
            return Rule("web", access.subject)
        if access.kind == "mcp":
            return Rule("mcp", access.subject.partition("/")[0])
        return Rule(access.kind)

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
        if access.kind in ("write", "edit") and access.outside:
            hint = f"--allow '{access.kind}:{access.subject}'"
        elif access.kind == "read":
            hint = f"--allow 'read:{os.path.join(os.path.dirname(access.subject), '*')}'"
        else:
            hint = f"--allow {access.kind}"
        return f"not allowed without asking: {access.summary()} (rerun with {hint})"
