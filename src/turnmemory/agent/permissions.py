"""Who may do what: access requests, allow rules and the decision.

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
  newlines, redirected only into the workspace or ``/dev/null``: see :mod:`.bash._grammar`) and each of its
  simple commands is covered by one of them: the pattern matches it, and what the command does
  beyond its program's own work (:mod:`.bash._programs`) is covered too. A wildcard never covers an option
  or subcommand that runs another program or moves the program elsewhere (``git -c``, ``find
  -exec``): the pattern must spell it out, or, for a command a runner runs as given (``timeout 60
  make``), the patterns must cover that command. A path outside the workspace needs the read or
  write rule the file tools need. The files a program takes its commands from (a Makefile) are
  covered as they were when the rule took effect (the start of the run, or the "allow for this
  session" answer); outside the sandbox, a program that runs the project's code also needs the
  workspace unchanged since then. Anything else needs a bare ``bash`` rule or a person's answer.
- ``web`` with an optional host pattern, ``mcp`` with an optional ``server`` or ``server/tool`` pattern.
- ``all``: every kind without a pattern. ``dangerous``: lifts the refusal of dangerous commands
  (they still need a ``bash`` rule). Interactively a dangerous command is always asked about, even
  when bash is allowed for the session, unless ``dangerous`` is allowed explicitly.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal, NamedTuple

from turnmemory._text import terminal_safe
from turnmemory.agent.bash import _grammar, _programs

__all__ = [
    "KINDS",
    "Access",
    "AccessKind",
    "Answer",
    "Asker",
    "Decision",
    "Permissions",
    "Rule",
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
        """Whether this rule alone grants ``access`` (the dangerous refusal is checked separately).

        A bash pattern grants nothing alone: what it covers depends on the session's other rules and
        on when it took effect, so :class:`Permissions` decides it."""
        if self.kind == "all":
            return not (access.outside and access.kind in ("write", "edit"))
        if self.kind != access.kind:
            return False
        if self.pattern is None:
            return not (access.outside and access.kind in ("write", "edit"))
        if access.kind in _PATH_KINDS:
            return _path_matches(self.pattern, access.subject, workspace)
        if access.kind == "bash":
            return False
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


_SHOWN = 300
"""The most of a subject a refusal repeats."""


# -- plain scripts and session scopes ------------------------------------------------------------


def plain_problem(command: str, workspace: str) -> str | None:
    """Why the bash script ``command`` is not plain, or ``None`` (see :mod:`.bash._grammar`): only a plain
    script can match a bash rule's pattern or get a session grant. Redirection targets must resolve
    inside ``workspace`` (or be ``/dev/null``)."""
    script = _grammar.parse_plain(command)
    if script.problem is not None:
        return script.problem
    for target in script.targets:
        if target not in _grammar.DEV_TARGETS and not resolve_path(target, workspace)[1]:
            return f"a redirection outside the workspace ({_visible(target)})"
    return None


def _command_matches(pattern: str, text: str) -> bool:
    return fnmatchcase(text, pattern) or (pattern.endswith(" *") and fnmatchcase(text, pattern[:-2]))


def _literal_prefix(pattern: str) -> str:
    """The start of ``pattern`` before its first wildcard (``[*]`` and the like count as literal)."""
    out, at = [], 0
    while at < len(pattern) and pattern[at] not in "*?":
        if pattern[at] == "[":
            if pattern[at + 2 : at + 3] != "]" or pattern[at + 1 : at + 2] in ("", "!", "^", "]"):
                break
            out.append(pattern[at + 1])
            at += 3
            continue
        out.append(pattern[at])
        at += 1
    return "".join(out)


def _exact_pattern(words: Sequence[str]) -> str:
    """A pattern matching exactly ``words``."""
    return re.sub(r"([*?\[])", r"[\1]", _grammar.command_text(words))


def _outside(path: str, workspace: str) -> bool:
    return not (path == workspace or path.startswith(workspace.rstrip(os.sep) + os.sep))


def _resolve(word: str, cwd: str) -> str:
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(word)))


def _leaves(use: _programs.PathUse, workspace: str) -> bool:
    return _outside(_resolve(use.path.removeprefix("file://"), workspace), workspace)


def _beyond_own_work(words: Sequence[str], workspace: str, depth: int = 0) -> bool:
    """Whether ``words`` does more than its program's own work: an escape (in the command a runner
    runs too), or a path outside the workspace."""
    inspection = _programs.inspect(words, workspace)
    return any(_leaves(use, workspace) for use in inspection.paths) or any(
        escape.inner is None or depth >= _MAX_INNER or _beyond_own_work(escape.inner, workspace, depth + 1)
        for escape in inspection.escapes
    )


def _scope_rule(simple: _grammar.SimpleCommand, workspace: str) -> Rule:
    """What an "allow for this session" answer grants for one command: its prefix, or the command
    exactly when it does more than its program's own work (an escape, a path outside)."""
    if _beyond_own_work(simple.words, workspace):
        return Rule("bash", _exact_pattern(simple.words))
    words, more = _grammar.prefix(simple.words)
    pattern = _exact_pattern(words)
    return Rule("bash", pattern + " *" if more else pattern)


_MAX_GLOB = 1000
_MAX_SCAN = 50_000
"""The most workspace entries looked at to see whether the workspace changed."""
_MAX_DIRECTORIES = 8
_MAX_INNER = 4


def _changed_since(path: str, since: int) -> bool:
    """Whether ``path`` (the link or what it names) was created or changed after ``since`` (ns)."""
    try:
        changed = os.lstat(path).st_ctime_ns
    except OSError:
        return False
    with contextlib.suppress(OSError):
        changed = max(changed, os.stat(path).st_ctime_ns)
    return changed > since


def _workspace_change(workspace: str, since: int) -> str | None:
    """The first file of the workspace (``.git`` aside) changed after ``since``, or why it cannot tell."""
    stack, seen = [workspace], 0
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > _MAX_SCAN:
                return "too many files to check"
            if entry.name == ".git":
                continue
            try:
                if entry.stat(follow_symlinks=False).st_ctime_ns > since:
                    return os.path.relpath(entry.path, workspace)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                continue
    return None


def _glob(word: str, cwd: str) -> list[str]:
    """The names bash makes of the wildcard ``word`` in ``cwd`` (the word itself when none match); a
    part like ``.*`` also counts as ``..``, which bash before 5.2 matches. More than :data:`_MAX_GLOB`
    names count as ``/``: too many to check."""
    pattern = os.path.expanduser(word)
    found = list(itertools.islice(glob.iglob(pattern, root_dir=cwd), _MAX_GLOB + 1))
    if len(found) > _MAX_GLOB:
        return ["/"]
    dotted = _DOT_WILDCARD.sub("..", pattern)
    return [*(found or [word]), *([dotted] if dotted != pattern else [])]


_DOT_WILDCARD = re.compile(r"(?<![^/])\.[^/]*[*?\[][^/]*")


class _Gap(NamedTuple):
    """Why bash patterns do not cover a script, and what would (one line each)."""

    problem: str
    remedy: str


class _BashCheck:
    """Whether the bash patterns among ``rules`` cover one plain script (see the module docstring)."""

    def __init__(self, permissions: Permissions, rules: Sequence[Rule], *, escalated: bool) -> None:
        self.permissions = permissions
        self.workspace = permissions.workspace
        self.rules = rules
        self.escalated = escalated
        self.written: set[str] = set()
        """The files earlier commands of the script redirect into."""
        self.patterns = [
            (rule.pattern, permissions.since(rule))
            for rule in rules
            if rule.kind == "bash" and rule.pattern is not None
        ]

    def script(self, command: str) -> _Gap | None:
        """None when the patterns cover ``command``, else the first gap."""
        problem = plain_problem(command, self.workspace)
        if problem is not None:
            return _Gap(f"not a plain command: {problem}", "only --allow bash permits it")
        commands = _grammar.parse_plain(command).commands
        missing = [c for c in commands if not any(_command_matches(p, c.text) for p, _ in self.patterns)]
        if missing:
            rules = dict.fromkeys(_scope_rule(simple, self.workspace) for simple in missing)
            unmatched = f"{_visible(missing[0].text)[:_SHOWN]} matches no bash rule" if self.patterns else ""
            return _Gap(
                unmatched, f"rerun with {' '.join(f'--allow {_quoted(r)}' for r in rules)} or --allow bash"
            )
        cwds: tuple[str, ...] = (self.workspace,)
        changed = False
        for simple in commands:
            gap = self.command(simple.words, simple.globbed, cwds, changed, 0)
            if gap is not None:
                return gap
            for cwd in cwds:
                inspection = _programs.inspect(simple.words, cwd)
                changed = changed or inspection.changes_files
                if inspection.directory is not None:
                    cwds = tuple(dict.fromkeys((*cwds, _resolve(inspection.directory, cwd))))
            self.written.update(
                _resolve(target, cwd)
                for target in simple.targets
                if target not in _grammar.DEV_TARGETS
                for cwd in cwds
            )
            if len(cwds) > _MAX_DIRECTORIES:
                return _Gap("the script changes directory too often to check", "only --allow bash permits it")
        return None

    def command(
        self,
        words: Sequence[str],
        globbed: Sequence[int],
        cwds: Sequence[str],
        changed: bool,
        depth: int,
        extra: Sequence[tuple[str, int]] = (),
    ) -> _Gap | None:
        """None when a pattern covers the simple command ``words``, else the gap of the first that
        matches (``extra``: more patterns, for a command a runner runs)."""
        text = _grammar.command_text(words)
        first: _Gap | None = None
        for pattern, since in (*extra, *self.patterns):
            if _command_matches(pattern, text):
                gap = self.beyond(pattern, since, words, globbed, cwds, changed, depth)
                if gap is None:
                    return None
                first = first or gap
        return first or _Gap(
            f"{_visible(text)[:_SHOWN]} matches no bash rule",
            f"rerun with --allow {_quoted(_scope_rule(_grammar.SimpleCommand(tuple(words)), self.workspace))} "
            "or --allow bash",
        )

    def beyond(
        self,
        pattern: str,
        since: int,
        words: Sequence[str],
        globbed: Sequence[int],
        cwds: Sequence[str],
        changed: bool,
        depth: int,
    ) -> _Gap | None:
        """What of ``words`` the matching ``pattern`` does not cover: None when it covers all."""
        literal = len(_literal_prefix(pattern))
        name = _visible(_grammar.program_name(words[0]))
        exact = f"--allow {_quoted(Rule('bash', _exact_pattern(words)))}"

        def spelled(end: int) -> bool:
            return len(_grammar.command_text(words[:end])) <= literal

        for cwd in cwds:
            for index in globbed:
                word = words[index]
                if word.startswith("-") or (changed and word[:1] in "*?["):
                    return _Gap(
                        f"the wildcard {_visible(word)} can expand into options of {name}",
                        f"rerun with {exact} or --allow bash",
                    )
                if any(found.startswith("-") for found in _glob(word, cwd)):
                    return _Gap(
                        f"{_visible(word)} expands to names {name} would read as options",
                        f"rerun with {exact} or --allow bash",
                    )
            inspection = _programs.inspect(words, cwd)
            for escape in inspection.escapes:
                if spelled(escape.end):
                    continue
                if escape.inner is not None and depth < _MAX_INNER:
                    # A runner's command: covered by the patterns, or by what this one says after the runner.
                    head = len(_grammar.command_text(words[: escape.start])) + 1
                    tail = [(pattern[head:], since)] if spelled(escape.start + 1) and pattern[head:] else []
                    if self.command(escape.inner, (), cwds, changed, depth + 1, tail) is None:
                        continue
                return _Gap(
                    f"{_visible(escape.reason)}; 'bash:{_visible(pattern)}' does not cover that",
                    f"rerun with {exact} or --allow bash",
                )
            for use in inspection.paths:
                if use.index >= len(words) or not spelled(use.index + 1):  # an implicit path is never spelled
                    gap = self.path(use, use.index in globbed, cwd, changed, name, exact)
                    if gap is not None:
                        return gap
            inside_program = "/" in words[0] and not _outside(_resolve(words[0], cwd), self.workspace)
            for recipe in inspection.recipes:
                shown = _visible(recipe)
                if changed or _resolve(recipe, cwd) in self.written:
                    return _Gap(
                        f"{name} takes its commands from {shown}, which an earlier command of the script may change",
                        "run the commands one at a time, or --allow bash",
                    )
                if _changed_since(_resolve(recipe, cwd), since):
                    return _Gap(
                        f"{name} takes its commands from {shown}, which changed after 'bash:{_visible(pattern)}' "
                        "took effect",
                        "a new run takes it as it is then; or --allow bash",
                    )
            if self.escalated and (inspection.runs_project or inside_program):
                where = "an earlier command of the script may change it" if changed or self.written else None
                where = where or _workspace_change(self.workspace, since)
                if where is not None:
                    return _Gap(
                        f"{name} runs the project's code outside the sandbox, and the workspace changed after "
                        f"'bash:{_visible(pattern)}' took effect ({_visible(where)})",
                        "run it inside the sandbox (it needs no permission there), or --allow bash",
                    )
        return None

    def path(
        self, use: _programs.PathUse, globbed: bool, cwd: str, changed: bool, name: str, exact: str
    ) -> _Gap | None:
        """Whether a file the command names is inside the workspace, or granted like a file tool's access."""
        word = use.path.removeprefix("file://") if use.path.startswith("file://") else use.path
        if not word or word == "-" or word in _grammar.DEV_TARGETS or word in ("/dev/stdin", "/dev/zero"):
            return None
        for found in _glob(word, cwd) if globbed else [word]:
            real = _resolve(found, cwd)
            if not _outside(real, self.workspace):
                if changed:
                    return _Gap(
                        f"{_visible(word)} is named after a command that may create or replace files "
                        "(a link could lead it out of the workspace)",
                        "run the commands one at a time, or --allow bash",
                    )
                continue
            shown = _visible(real)
            if use.kind == "move":
                return _Gap(
                    f"{name} works in {shown}, outside the workspace", f"rerun with {exact} or --allow bash"
                )
            access = Access(use.kind, real, outside=True)
            if use.kind == "read" and self.permissions.readable_without_rule(real):
                continue
            if any(rule.allows(access, self.workspace) for rule in self.rules):
                continue
            if use.kind == "read":
                hint = f"--allow {_quoted(Rule('read', os.path.join(os.path.dirname(real), '*')))}"
                return _Gap(
                    f"{name} reads {shown}, outside the workspace",
                    f"rerun with {hint}, {exact} or --allow bash",
                )
            hint = f"--allow {_quoted(Rule('write', real))}"
            return _Gap(
                f"{name} writes {shown}, outside the workspace", f"rerun with {hint}, {exact} or --allow bash"
            )
        return None


def _quoted(rule: Rule) -> str:
    """A rule as a shell word for a hint: ``'bash:git status *'``."""
    text = _visible(str(rule))
    text = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return "'" + text.replace("'", "'\\''") + "'"


def session_scope(access: Access, workspace: str) -> tuple[Rule, ...]:
    """The rules an "allow for this session" answer adds for ``access``; none for a dangerous command
    or a bash script that is not plain (such an answer allows it once).

    A bash script grants each of its simple commands' prefix (see :func:`._grammar.prefix`): ``git
    status`` grants ``git status *``, ``python3 app.py`` grants ``python3 app.py *``; a command that
    does more than its program's own work (``git -c x=y status``, ``cat /etc/hosts``) grants itself
    exactly, and what a granted prefix covers is decided like any pattern's. An outside path
    grants itself (read: its directory), a host itself, an MCP tool its server; other accesses their
    kind, which covers the workspace only.
    """
    if access.dangerous is not None:
        return ()
    if access.kind == "bash":
        if plain_problem(access.subject, workspace) is not None:
            return ()
        rules = [_scope_rule(simple, workspace) for simple in _grammar.parse_plain(access.subject).commands]
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
        self._started = time.time_ns()
        self._granted: dict[Rule, int] = {}

    def decide(self, access: Access) -> Decision:
        """Grant or deny ``access``, asking when needed and possible."""
        if access.kind == "read" and (not access.outside or self.readable_without_rule(access.subject)):
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
            for rule in grant:
                if rule not in self.session_rules:
                    self.session_rules.append(rule)
                    self._granted[rule] = time.time_ns()
            return Decision(True, "session")
        return Decision(True, "once")

    def _covered(self, access: Access, rules: Sequence[Rule]) -> bool:
        """Whether ``rules`` grant ``access``: one of them, or for a plain bash script its patterns
        together (one per simple command, with the read and write rules for the files it names)."""
        if any(rule.allows(access, self.workspace) for rule in rules):
            return True
        return access.kind == "bash" and self._bash_gap(access, rules) is None

    def _bash_gap(self, access: Access, rules: Sequence[Rule]) -> _Gap | None:
        escalated = access.escalation is not None
        return _BashCheck(self, rules, escalated=escalated).script(access.subject)

    def since(self, rule: Rule) -> int:
        """When ``rule`` took effect (ns since the epoch): its session answer, or the start of the run."""
        return self._granted.get(rule, self._started)

    def reset_session(self) -> None:
        """Forget "allow for this session" answers (a new or resumed session)."""
        self.session_rules.clear()
        self._granted.clear()

    def readable_without_rule(self, path: str) -> bool:
        """Whether ``path`` outside the workspace is readable without asking (the spill directory)."""
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
            hint = self._bash_hint(access)
        else:
            hint = f"rerun with --allow {access.kind}"
        return f"not allowed without asking: {what} ({hint})"

    def _bash_hint(self, access: Access) -> str:
        gap = self._bash_gap(access, (*self.rules, *self.session_rules))
        if gap is None:
            return "rerun with --allow bash"
        return f"{gap.problem}; {gap.remedy}" if gap.problem else gap.remedy
