"""What a program's words make it do beyond its own work, from each program's manual.

A bash rule's pattern names a program (``bash:git *``). Its wildcard covers that program doing its own
work here, never what the program can be told to hand to another program or to do elsewhere.
:func:`inspect` reads one simple command against a table per program (each cites the manual section
it comes from) and reports three things for :mod:`turnmemory.agent.permissions` to decide:

- :class:`Escape`: words that make the program run another program (``git -c core.fsmonitor=CMD``,
  ``find -exec``, ``tar --to-command``, ``python -c``, a git alias) or work in another place
  (``git -C DIR``). A pattern covers them only by spelling them out (``bash:git -c color.ui=never
  status``); a command a runner runs as given (``timeout 60 make test``) may instead be covered by
  the patterns on its own.
- :class:`PathUse`: words that may name files, read, written, or worked in; outside the workspace
  they need the read and write rules the file tools need.
- recipes: the files a build or package tool takes the commands it runs from (a Makefile,
  package.json's scripts, Cargo.toml and .cargo/config.toml), which a rule covers only as they were
  when it took effect. The project's own code (a script an interpreter runs, the tests a recipe
  runs) is what the agent edits, so it is not a recipe; a command that runs it says so
  (``runs_project``), for the sandbox's sake.

Options count in every spelling the program accepts (:mod:`._argv` reads them: abbreviations,
bundles, glued values, options after operands).

A program in no table: a pattern covers its options as written (nothing is known of them), every
word that names a path counts as a file it writes (outside the workspace that needs a write rule
naming it), and it may change any file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from turnmemory.agent.bash._argv import (
    Escape,
    Inspection,
    Options,
    PathKind,
    PathUse,
    Token,
    effects,
    given,
    looks_like_path,
    names,
    operands_of,
    option_table,
    read_text,
    scan,
)
from turnmemory.agent.bash._grammar import INTERPRETERS, code_source, program_name

__all__ = [
    "Escape",
    "Inspection",
    "PathKind",
    "PathUse",
    "RunningOption",
    "inspect",
    "running_options",
    "running_subcommands",
]

_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})
"""Builtins after which the script's later commands run in another directory."""

_MAX_INCLUDES = 32


# -- git (git(1), gitcli(7), and each git-<command>(1)) -------------------------------------------

_CONFIGURES = (
    "sets configuration, which can name a program to run (git-config(1): core.fsmonitor, alias.*, ...)"
)
_ELSEWHERE = "makes git use another repository or work tree, whose configuration can run programs"
_GIT = option_table(
    "--namespace --super-prefix --list-cmds --attr-source",
    optional="--exec-path",
    flags="--bare",
    runs={
        "-c --config-env": "git -c / --config-env " + _CONFIGURES,
        "-C --git-dir --work-tree --bare": "git -C / --git-dir / --work-tree / --bare " + _ELSEWHERE,
        "--exec-path": "git --exec-path=DIR runs git's commands from another directory",
    },
    abbreviations=False,
)
"""git(1) OPTIONS: the options before the command (spelled whole: git.c does not abbreviate them)."""

_GIT_RUNS = {
    "difftool": "git difftool runs a diff tool (git-difftool(1))",
    "mergetool": "git mergetool runs a merge tool (git-mergetool(1))",
    "filter-branch": "git filter-branch runs its filters as shell commands (git-filter-branch(1))",
    "instaweb": "git instaweb starts a web server and a browser (git-instaweb(1))",
    "web--browse": "git web--browse starts a browser",
    "credential": "git credential runs credential helpers and prints credentials (git-credential(1))",
    "credential-store": "git credential-store reads and writes stored credentials",
    "credential-cache": "git credential-cache reads and writes cached credentials",
    "credential-cache--daemon": "git credential-cache--daemon holds credentials",
    "shell": "git shell runs commands (git-shell(1))",
    "daemon": "git daemon serves repositories to the network (git-daemon(1))",
    "remote-ext": "git remote-ext runs a command as a transport (git-remote-ext(1))",
    "remote-fd": "git remote-fd talks over descriptors it is given (git-remote-fd(1))",
    "for-each-repo": "git for-each-repo runs a command in other repositories (git-for-each-repo(1))",
    "merge-index": "git merge-index runs a merge program (git-merge-index(1))",
    "merge-one-file": "git merge-one-file runs merge programs",
    "send-email": "git send-email sends mail through a program it can be told (git-send-email(1))",
    "hook": "git hook runs a hook (git-hook(1))",
    "submodule--helper": "git submodule--helper runs submodule commands",
    "cvsserver": "git cvsserver serves the repository (git-cvsserver(1))",
    "cvsimport": "git cvsimport runs cvs (git-cvsimport(1))",
    "cvsexportcommit": "git cvsexportcommit runs cvs (git-cvsexportcommit(1))",
    "svn": "git svn runs Subversion (git-svn(1))",
    "p4": "git p4 runs Perforce (git-p4(1))",
    "archimport": "git archimport runs tla (git-archimport(1))",
}
"""git(1) GIT COMMANDS whose purpose is to run another program: never covered by a wildcard."""

_GIT_BUILTINS = names(
    """add am annotate apply archive backfill bisect blame branch bugreport bundle cat-file check-attr
    check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick clean clone
    column commit commit-graph commit-tree config count-objects describe diagnose diff diff-files
    diff-index diff-pairs diff-tree fast-export fast-import fetch fetch-pack fmt-merge-msg for-each-ref
    format-patch fsck fsck-objects gc get-tar-commit-id grep hash-object help http-fetch http-push
    imap-send index-pack init init-db interpret-trailers last-modified log ls-files ls-remote ls-tree
    mailinfo mailsplit maintenance merge merge-base merge-file merge-tree mktag mktree multi-pack-index
    mv name-rev notes pack-objects pack-redundant pack-refs patch-id prune prune-packed pull push
    quiltimport range-diff read-tree rebase receive-pack refs reflog remote repack replace replay
    request-pull rerere reset restore rev-list rev-parse revert rm send-pack shortlog show show-branch
    show-index show-ref sparse-checkout stage stash status stripspace submodule switch symbolic-ref tag
    unpack-file unpack-objects update-index update-ref update-server-info upload-archive upload-pack var
    verify-commit verify-pack verify-tag version whatchanged worktree write-tree"""
)
"""git(1) GIT COMMANDS that do their own work. Any other command is an alias (which can run a shell
command: git-config(1) alias.*) or a git-NAME program found on the PATH."""

_GIT_KEEPS_FILES = names(
    """add annotate blame branch cat-file check-attr check-ignore check-mailmap check-ref-format cherry
    commit count-objects describe diff diff-files diff-index diff-tree fetch for-each-ref fsck grep
    hash-object help log ls-files ls-remote ls-tree merge-base name-rev notes range-diff reflog remote
    rev-list rev-parse shortlog show show-branch show-ref status tag var verify-commit verify-tag
    version whatchanged"""
)
"""Commands that change no file of the work tree (only the repository under .git)."""

_GIT_REVISIONS = names(
    """stash branch cherry cherry-pick describe fetch for-each-ref log-tree ls-remote merge merge-base name-rev
    notes pull push range-diff rebase reflog remote rev-list revert show-branch show-ref switch
    symbolic-ref tag update-ref verify-commit verify-tag"""
)
"""Commands whose operands are revisions, refs, remotes or URLs: an operand is a path only when it
looks like one (``/x``, ``../x``, ``file://``)."""

_GIT_WRITES = frozenset({"clone", "init", "init-db", "worktree", "bundle"})
"""Commands whose operands name where they write (git-clone(1) <directory>, git-init(1), ...)."""

_GIT_STRATEGIES = frozenset({"ort", "recursive", "resolve", "octopus", "ours", "subtree"})
"""git-merge(1) MERGE STRATEGIES built in; any other -s NAME runs git-merge-NAME from the PATH."""
_GIT_MERGES = frozenset({"merge", "pull", "rebase", "cherry-pick", "revert"})
"""The commands that take -s STRATEGY."""

_GIT_DIFF = option_table(
    "-U --unified --output-indicator-new --output-indicator-old --output-indicator-context --stat "
    "--diff-filter -S -G --find-object -l --skip-to --rotate-to --src-prefix --dst-prefix --line-prefix "
    "--inter-hunk-context --anchored --diff-algorithm --word-diff-regex --color-moved-ws "
    "--ws-error-highlight --ignore-matching-lines -I --abbrev",
    flags="--ext-diff",
    runs={
        "--ext-diff": "git --ext-diff runs the external diff program configured (git-diff(1) diff.external)"
    },
    reads="-O",
    writes="--output",
)
"""The DIFF OPTIONS of git-diff(1), git-log(1), git-show(1) and the plumbing diffs: --ext-diff runs a
program; --output=FILE writes and -O ORDERFILE reads a file."""
_GIT_LOG_VALUES = (
    " -n --max-count --skip --since --after --since-as-filter --until --before --author --committer "
    "--grep --grep-reflog --format --pretty --encoding --date --decorate-refs --decorate-refs-exclude "
    "-L --min-parents --max-parents --branches --tags --remotes --glob --exclude --notes --show-notes"
)


_UPLOAD_PACK = "--upload-pack runs the program it names as the remote side (git-fetch(1))"
_RECEIVE_PACK = "--receive-pack runs the program it names as the remote side (git-push(1))"
_GIT_SUBCOMMANDS: dict[str, Options] = {
    "diff": option_table("--relative").merged(_GIT_DIFF),
    "log": option_table(_GIT_LOG_VALUES).merged(_GIT_DIFF),
    "show": option_table(_GIT_LOG_VALUES).merged(_GIT_DIFF),
    "whatchanged": option_table(_GIT_LOG_VALUES).merged(_GIT_DIFF),
    "diff-files": _GIT_DIFF,
    "diff-index": _GIT_DIFF,
    "diff-tree": _GIT_DIFF,
    "range-diff": option_table(_GIT_LOG_VALUES).merged(_GIT_DIFF),
    "format-patch": option_table(
        _GIT_LOG_VALUES + " --subject-prefix --in-reply-to --to --cc --from --signature --base -v "
        "--reroll-count --suffix --start-number --cover-from-description",
        writes="-o --output-directory --signature-file",
    ).merged(_GIT_DIFF),
    "stash": option_table("-m --message", reads="--pathspec-from-file").merged(_GIT_DIFF),
    "grep": option_table(
        "-e -m --max-count -A -B -C --context --max-depth --threads --after-context --before-context",
        optional="-O --open-files-in-pager",
        runs={
            "-O --open-files-in-pager": "git grep -O runs the pager it names on the matching files "
            "(git-grep(1))"
        },
        reads="-f",
    ),
    "fetch": option_table(
        "--depth --deepen --shallow-since --shallow-exclude -j --jobs --negotiation-tip --refmap -o "
        "--server-option --filter --submodule-prefix",
        runs={"--upload-pack": "git fetch " + _UPLOAD_PACK},
    ),
    "pull": option_table(
        "--depth --deepen --shallow-since --shallow-exclude -j --jobs -o --server-option -s --strategy "
        "-X --strategy-option -m",
        runs={"--upload-pack": "git pull " + _UPLOAD_PACK},
    ),
    "clone": option_table(
        "-o --origin -b --branch --depth --shallow-since --shallow-exclude -j --jobs --filter "
        "--bundle-uri --server-option --revision",
        runs={
            "-u --upload-pack": "git clone " + _UPLOAD_PACK,
            "--template": "git clone --template copies hooks, which git then runs (git-clone(1))",
            "-c --config": "git clone -c " + _CONFIGURES,
        },
        reads="--reference --reference-if-able",
        writes="--separate-git-dir",
    ),
    "ls-remote": option_table(
        "--sort -o --server-option",
        runs={"--upload-pack --exec": "git ls-remote " + _UPLOAD_PACK},
    ),
    "fetch-pack": option_table(
        "--depth --shallow-since --shallow-exclude",
        runs={"--upload-pack --exec": "git fetch-pack " + _UPLOAD_PACK},
    ),
    "push": option_table(
        "--repo -o --push-option --recurse-submodules",
        runs={"--receive-pack --exec": "git push " + _RECEIVE_PACK},
    ),
    "send-pack": option_table(runs={"--receive-pack --exec": "git send-pack " + _RECEIVE_PACK}),
    "archive": option_table(
        "--format --prefix --remote --add-virtual-file",
        runs={"--exec": "git archive --exec runs the program it names as the remote side (git-archive(1))"},
        reads="--add-file",
        writes="-o --output",
    ),
    "rebase": option_table(
        "--onto -s --strategy -X --strategy-option -C --whitespace",
        runs={"-x --exec": "git rebase --exec runs a shell command after each commit (git-rebase(1))"},
    ),
    "merge": option_table("-m -s --strategy -X --strategy-option --into-name", reads="-F --file"),
    "cherry-pick": option_table("-m --mainline -s --strategy -X --strategy-option"),
    "revert": option_table("-m --mainline -s --strategy -X --strategy-option"),
    "notes": option_table("-m -C -c --ref -s --strategy", reads="-F --file"),
    "commit": option_table(
        "-m --message -C --reuse-message -c --reedit-message --fixup --squash --author --date "
        "--cleanup --trailer",
        reads="-F --file -t --template --pathspec-from-file",
    ),
    "tag": option_table(
        "-m --message -u --local-user --cleanup --sort --format --contains --no-contains --merged "
        "--no-merged --points-at",
        reads="-F --file",
    ),
    "checkout": option_table("-b -B --orphan --conflict", reads="--pathspec-from-file"),
    "switch": option_table("-c --create -C --force-create --orphan --conflict"),
    "restore": option_table("-s --source", reads="--pathspec-from-file"),
    "reset": option_table(reads="--pathspec-from-file"),
    "add": option_table("--chmod", reads="--pathspec-from-file"),
    "rm": option_table(reads="--pathspec-from-file"),
    "branch": option_table(
        "-u --set-upstream-to --sort --format --contains --no-contains --merged --no-merged --points-at"
    ),
    "init": option_table(
        "-b --initial-branch --object-format --ref-format --shared",
        runs={"--template": "git init --template copies hooks, which git then runs (git-init(1))"},
        writes="--separate-git-dir",
    ),
    "checkout-index": option_table(writes="--prefix"),
    "bugreport": option_table("-s --suffix", writes="-o --output-directory"),
    "diagnose": option_table("-s --suffix --mode", writes="-o --output-directory"),
    "fast-export": option_table(reads="--import-marks", writes="--export-marks"),
    "fast-import": option_table(reads="--import-marks --import-marks-if-exists", writes="--export-marks"),
    "config": option_table("--type --default --comment --value -t --url", reads="-f --file --blob"),
    "submodule": option_table("-b --branch --name --depth --reference"),
    "help": option_table(
        flags="-w --web", runs={"-w --web": "git help --web starts a browser (git-help(1))"}
    ),
    "worktree": option_table("-b -B --reason"),
    "bundle": option_table(),
}
_GIT_PLAIN = option_table()
_ONLY_WITH_A_VALUE = frozenset({"--exec-path"})
"""Optional-value options that run something only with their value (``git --exec-path`` prints)."""
_REMOTE_HELPER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
"""gitremote-helpers(7): ``<transport>::<address>`` runs git-remote-<transport> (``ext::`` runs a
command, git-remote-ext(1); ``fd::`` talks over descriptors)."""
_CONFIG_WRITES = names("--add --unset --unset-all --replace-all --rename-section --remove-section -e --edit")
_CONFIG_VERBS_WRITE = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})
_CONFIG_READS = names("--get --get-all --get-regexp --get-urlmatch -l --list --get-color --get-colorbool")


def _git(words: Sequence[str], cwd: str) -> Inspection:
    front = scan(words, 1, _GIT, until_operand=True)
    escapes = [
        Escape(t.start, t.end, _GIT.runs[t.option])
        for t in front
        if t.option is not None and t.option in _GIT.runs and (t.option not in _ONLY_WITH_A_VALUE or t.value)
    ]
    if not front or front[-1].option is not None:
        return Inspection(tuple(escapes), changes_files=False)
    sub, at = front[-1].value or "", front[-1].start
    if sub in _GIT_RUNS:
        return Inspection((*escapes, Escape(at, len(words), _GIT_RUNS[sub])))
    if sub not in _GIT_BUILTINS:
        reason = (
            f"git {sub} is an alias or a git-{sub} program, which can run any command (git-config(1) alias.*)"
        )
        rest = [PathUse(i, words[i], "write") for i in range(at + 1, len(words))]
        return Inspection((*escapes, Escape(at, at + 1, reason)), tuple(rest))
    options = _GIT_SUBCOMMANDS.get(sub, _GIT_PLAIN)
    tokens = scan(words, at + 1, options)
    kind: PathKind = "write" if sub in _GIT_WRITES else "read"
    more, paths = effects(tokens, options, kind)
    if sub in _GIT_REVISIONS:
        paths = [use for use in paths if use.kind != kind or looks_like_path(use.path)]
    escapes += more
    escapes += _git_subcommand_escapes(sub, at, words, tokens)
    for token in tokens:
        if token.value and _REMOTE_HELPER.match(token.value.removeprefix("--")):
            reason = "git names a remote helper (ext::, fd:: or git-remote-NAME), which runs a program"
            escapes.append(Escape(token.start, token.end, reason))
        if token.value and token.value.startswith("file:"):
            paths.append(PathUse(token.end - 1, token.value.removeprefix("file://"), "read"))
    return Inspection(
        tuple(escapes),
        tuple(paths),
        recipes=(".gitmodules",) if sub == "submodule" else (),
        changes_files=sub not in _GIT_KEEPS_FILES,
    )


def _git_subcommand_escapes(sub: str, at: int, words: Sequence[str], tokens: list[Token]) -> list[Escape]:
    """What a few commands do with their operands: config writes, strategies, bisect run, foreach."""
    operands = operands_of(tokens)
    first = operands[0].value if operands else None
    whole = [Escape(at, len(words), "")]
    if sub == "config":
        options = {token.option for token in tokens}
        writes = bool(options & _CONFIG_WRITES) or first in _CONFIG_VERBS_WRITE
        if not writes and first not in ("get", "list") and not options & _CONFIG_READS:
            writes = len(operands) >= 2
        reason = "git config writes configuration, which can name a program to run (git-config(1))"
        return [replace(whole[0], reason=reason)] if writes else []
    if sub == "bisect" and first == "run":
        return [replace(whole[0], reason="git bisect run runs a command at each step (git-bisect(1))")]
    if sub == "submodule" and "foreach" in [token.value for token in operands[:1]]:
        return [replace(whole[0], reason="git submodule foreach runs a shell command (git-submodule(1))")]
    if sub == "maintenance" and first not in (None, "run"):
        reason = "git maintenance schedules jobs and edits the user's configuration (git-maintenance(1))"
        return [replace(whole[0], reason=reason)]
    escapes = []
    for token in given(tokens, "-s", "--strategy") if sub in _GIT_MERGES else ():
        if token.value not in _GIT_STRATEGIES:
            reason = f"git {sub} -s {token.value} runs git-merge-{token.value} from the PATH (git-merge(1))"
            escapes.append(Escape(token.start, token.end, reason))
    return escapes


# -- find, xargs (find(1) EXPRESSION, xargs(1)) --------------------------------------------------

_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls"})
_FIND_READS = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
_FIND_VALUES = names(
    """-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype -size
    -perm -user -group -uid -gid -mtime -mmin -atime -amin -ctime -cmin -maxdepth -mindepth -links -inum
    -printf -fstype -used -context -regextype -D"""
)
_FOLLOWS = "follows symbolic links, which can lead out of the workspace"


def _find(words: Sequence[str], cwd: str) -> Inspection:
    index, escapes, starts = 1, [], []
    while index < len(words) and (words[index] in ("-H", "-L", "-P", "-D") or words[index].startswith("-O")):
        if words[index] == "-L":
            escapes.append(Escape(index, index + 1, "find -L " + _FOLLOWS))
        index += 2 if words[index] == "-D" else 1
    while index < len(words) and not (words[index].startswith("-") or words[index] in ("(", ")", "!", ",")):
        starts.append(index)
        index += 1
    paths: list[PathUse] = []
    deletes = writes = False
    while index < len(words):
        word = words[index]
        if word in _FIND_EXEC:
            end = next((i for i in range(index + 1, len(words)) if words[i] in (";", "+")), len(words) - 1)
            escapes.append(Escape(index, end + 1, f"find {word} runs a command on each file it finds"))
            index, writes = end + 1, True
            continue
        if word in ("-follow", "-files0-from"):
            reason = (
                "find -follow " + _FOLLOWS
                if word == "-follow"
                else "find -files0-from takes its starting points from a file"
            )
            escapes.append(Escape(index, min(index + 2, len(words)), reason))
        elif word == "-delete":
            deletes = True
        elif word in _FIND_WRITES or word == "-fprintf":
            if index + 1 < len(words):
                paths.append(PathUse(index + 1, words[index + 1], "write"))
            writes = True
            index += 3 if word == "-fprintf" else 2
            continue
        elif word in _FIND_READS or (word.startswith("-newer") and len(word) == 8 and word[7] != "t"):
            if index + 1 < len(words):
                paths.append(PathUse(index + 1, words[index + 1], "read"))
            index += 2
            continue
        elif word in _FIND_VALUES or word.startswith("-newer"):
            index += 2
            continue
        index += 1
    paths += [PathUse(i, words[i], "write" if deletes else "read") for i in starts]
    return Inspection(tuple(escapes), tuple(paths), changes_files=writes)


_XARGS = option_table(
    "-d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs -s --max-chars --process-slot-var",
    optional="-e --eof -i --replace -l",
    reads="-a --arg-file",
)


def _xargs(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _XARGS, until_operand=True)
    escapes, paths = effects(tokens, _XARGS, None)
    operands = operands_of(tokens)
    if operands:
        reason = "xargs runs a command with arguments read from its input (xargs(1))"
        escapes.append(Escape(operands[0].start, len(words), reason))
    return Inspection(tuple(escapes), tuple(paths), changes_files=bool(operands))


# -- runners: programs that run the command after their options (coreutils env(1), nice(1), ...) --


@dataclass(frozen=True, slots=True)
class _Runner:
    """A program that runs the command given after its options and ``skip`` further operands."""

    options: Options
    skip: int = 0
    no_command: frozenset[str] = frozenset()
    """Options after which the operands are not a command (``ionice -p PID``)."""


_RUNNERS: dict[str, _Runner] = {
    "env": _Runner(
        option_table(
            "-u --unset -a --argv0",
            optional="--block-signal --default-signal --ignore-signal",
            runs={
                "-S --split-string": "env -S splits a string into the command it runs (env(1))",
                "-C --chdir": "env -C runs the command in another directory (env(1))",
            },
        )
    ),
    "nice": _Runner(option_table("-n --adjustment")),
    "nohup": _Runner(option_table()),
    "timeout": _Runner(option_table("-s --signal -k --kill-after"), skip=1),
    "stdbuf": _Runner(option_table("-i --input -o --output -e --error")),
    "time": _Runner(option_table("-f --format", writes="-o --output")),
    "ionice": _Runner(
        option_table("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
        no_command=frozenset({"-p", "--pid", "-P", "--pgid", "-u", "--uid"}),
    ),
    "taskset": _Runner(option_table(), skip=1, no_command=frozenset({"-p", "--pid"})),
    "chrt": _Runner(
        option_table("-T --sched-runtime -P --sched-period -D --sched-deadline"),
        skip=1,
        no_command=frozenset({"-p", "--pid"}),
    ),
    "command": _Runner(option_table(), no_command=frozenset({"-v", "-V"})),
    **{
        name: _Runner(
            option_table(
                "-w --workspace --python --registry",
                runs={
                    "-p --package --from --with": f"{name} --package installs the package it names",
                    "-c --call": f"{name} -c runs a shell command",
                },
            )
        )
        for name in ("npx", "pnpx", "bunx", "uvx")
    },
}
"""Runners whose command is known exactly, so the patterns may cover it on its own: env(1), nice(1),
nohup(1), timeout(1), stdbuf(1), time(1), ionice(1), taskset(1), chrt(1), bash(1) ``command``, and
npm-exec(1)'s npx with its kin (which also fetch the package when it is not installed)."""


def _runner(words: Sequence[str], cwd: str) -> Inspection:
    name = program_name(words[0])
    runner = _RUNNERS[name]
    tokens = scan(words, 1, runner.options, until_operand=True)
    escapes, paths = effects(tokens, runner.options, None)
    if any(token.option in runner.no_command for token in tokens):
        return Inspection(tuple(escapes), tuple(paths), changes_files=False)
    index = tokens[-1].start if tokens and tokens[-1].option is None else len(words)
    index += runner.skip
    if name == "env":
        first = index
        while index < len(words) and re.match(r"[^=\s]+=", words[index]):
            index += 1
        if index > first:
            reason = "env NAME=VALUE sets the environment of the command it runs (LD_PRELOAD, GIT_*, ...)"
            escapes.append(Escape(first, index, reason))
    if index >= len(words):
        return Inspection(tuple(escapes), tuple(paths), changes_files=False)
    reason = f"{name} runs the command that follows it"
    return Inspection((*escapes, Escape(index, len(words), reason, tuple(words[index:]))), tuple(paths))


_OPAQUE = names(
    """sudo doas su runuser setpriv chroot unshare nsenter fakeroot proot firejail systemd-run at batch
    crontab watch script flock strace ltrace valgrind gdb lldb perf parallel tmux screen setsid exec eval
    source . builtin trap alias pipx cpio ssh-agent dbus-run-session xvfb-run busybox"""
)
"""Programs whose arguments are a command or script they run (sudo(8), watch(1), flock(1), ...), or
whose options are too many to table: every argument is an escape."""


def _opaque(words: Sequence[str], cwd: str) -> Inspection:
    name = program_name(words[0])
    if len(words) == 1:
        return Inspection(changes_files=False)
    return Inspection((Escape(1, len(words), f"{name} runs the command or script it is given"),))


# -- sed (GNU sed manual: 3.2 sed commands, 3.3 The s Command, 3.8 Extended Commands) -------------

_SED = option_table(
    "-e --expression -f --file -l --line-length",
    optional="-i --in-place",
    abbreviations=True,
)


class _Unreadable(ValueError):
    """A script the checker cannot read (internal)."""


def _sed(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _SED)
    operands = operands_of(tokens)
    scripts = [(t.end - 1, t.value or "") for t in given(tokens, "-e", "--expression")]
    files = given(tokens, "-f", "--file")
    in_place = given(tokens, "-i", "--in-place")
    sandboxed = any(t.option == "--sandbox" for t in tokens)
    escapes: list[Escape] = []
    paths = [PathUse(t.end - 1, t.value or "", "read") for t in files]
    for token in files:
        text = read_text(os.path.join(cwd, os.path.expanduser(token.value or "")))
        if text is None:
            escapes.append(Escape(token.start, token.end, "sed -f names a script the checker cannot read"))
        else:
            scripts.append((token.end - 1, text))
    if not scripts and not files and operands:
        scripts.append((operands[0].start, operands[0].value or ""))
        operands = operands[1:]
    writes = bool(in_place)
    for index, script in scripts:
        try:
            runs, named = _sed_reach(script)
        except _Unreadable as why:
            escapes.append(Escape(index, index + 1, f"sed: {why}"))
            continue
        if runs and not sandboxed:
            escapes.append(Escape(index, index + 1, f"sed {runs} runs a shell command (GNU sed: e)"))
        paths += [PathUse(index, name, kind) for name, kind in named]
        writes = writes or any(kind == "write" for _, kind in named)
    for token in in_place:
        if "/" in (token.value or ""):
            escapes.append(
                Escape(token.start, token.end, "sed -i with a / in its suffix writes backups elsewhere")
            )
    kind: PathKind = "write" if in_place else "read"
    paths += [PathUse(t.start, t.value or "", kind) for t in operands]
    return Inspection(tuple(escapes), tuple(paths), changes_files=writes)


_SED_ADDRESS = re.compile(r"\d+(?:~\d+)?|\$")
_SED_SIMPLE = frozenset("{=dDgGhHnNpPxzF")


def _sed_reach(script: str) -> tuple[str, list[tuple[str, PathKind]]]:
    """What a sed script does beyond editing its input: the command that runs a shell (``e``, ``s///e``)
    or ``""``, and the files its ``r``/``R``/``w``/``W`` commands and ``w`` flags name."""
    runs, files = "", list[tuple[str, PathKind]]()
    at, end = 0, len(script)
    while at < end:
        if script[at] in " \t\n;}":
            at += 1
            continue
        if script[at] == "#":
            at = _line_end(script, at)
            continue
        at = _sed_addresses(script, at)
        if at >= end:
            raise _Unreadable("an address without a command")
        command = script[at]
        at += 1
        if command in _SED_SIMPLE:
            continue
        if command == "s":
            at, flags = _sed_substitution(script, at)
            before, w, name = flags.partition("w")
            if "e" in before:
                runs = runs or "s///e"
            if w:
                files.append((name.strip(), "write"))
        elif command == "y":
            delimiter = script[at : at + 1]
            at = _sed_delimited(script, _sed_delimited(script, at + 1, delimiter), delimiter)
        elif command in "aic":
            at = _line_end(script, at, continued=True)
        elif command in "rRwW":
            files.append((script[at : _line_end(script, at)].strip(), "read" if command in "rR" else "write"))
            at = _line_end(script, at)
        elif command == "e":
            runs = runs or "e"
            at = _line_end(script, at)
        elif command in ":btTv":
            while at < end and script[at] not in ";\n":
                at += 1
        elif command in "qQlL":
            while at < end and (script[at].isdigit() or script[at] in " \t"):
                at += 1
        else:
            raise _Unreadable(f"a script the checker cannot read (command {command!r})")
    return runs, [(name, kind) for name, kind in files if name not in ("/dev/stdout", "/dev/stderr")]


def _line_end(text: str, at: int, *, continued: bool = False) -> int:
    """The index of the newline ending the line at ``at`` (past backslash-newlines when ``continued``)."""
    while at < len(text) and text[at] != "\n":
        at += 2 if continued and text[at] == "\\" else 1
    return at


def _sed_addresses(script: str, at: int) -> int:
    """Past the addresses (``3``, ``$``, ``/re/I``, ``\\%re%``, ``1~2``, ``a,+3``) and ``!`` before a command."""
    for part in (0, 1):
        while at < len(script) and script[at] in " \t":
            at += 1
        match = _SED_ADDRESS.match(script, at)
        if match:
            at = match.end()
        elif script.startswith("/", at):
            at = _sed_delimited(script, at + 1, "/")
        elif script.startswith("\\", at):
            at = _sed_delimited(script, at + 2, script[at + 1 : at + 2])
        elif part == 1:
            raise _Unreadable("an address range without its end")
        else:
            break
        while at < len(script) and script[at] in "IM":
            at += 1
        if part == 1 or not script.startswith(",", at):
            break
        at += 1
        if script[at : at + 1] in ("+", "~"):
            at += 1
    while at < len(script) and script[at] in " \t!":
        at += 1
    return at


def _sed_delimited(script: str, at: int, delimiter: str) -> int:
    """The index after the text from ``at`` up to an unescaped ``delimiter``."""
    if not delimiter or delimiter in "\n\\":
        raise _Unreadable("a delimiter the checker cannot read")
    while at < len(script):
        if script[at] == "\\":
            at += 2
        elif script[at] == delimiter:
            return at + 1
        else:
            at += 1
    raise _Unreadable("an unterminated s, y or address")


def _sed_substitution(script: str, at: int) -> tuple[int, str]:
    """Past ``/regex/replacement/flags`` (``at`` on the delimiter): the index after it and the flags,
    a ``w`` flag's file name (the rest of the line) included."""
    delimiter = script[at : at + 1]
    at = _sed_delimited(script, _sed_delimited(script, at + 1, delimiter), delimiter)
    start = at
    while at < len(script) and script[at] not in ";\n}":
        if script[at] == "w":
            at = _line_end(script, at)
            break
        at += 1
    return at, script[start:at]


# -- awk (POSIX awk(1p): Output Statements, Functions; gawk manual 5.6 Redirecting Output, 2.2 options) --

_AWK = option_table(
    "-F --field-separator -v --assign",
    runs={
        "-i --include": "awk -i includes a source file (gawk)",
        "-l --load": "awk -l loads a shared library (gawk)",
    },
    reads="-f --file -E --exec -e --source",
)
_AWK_RISKS = [
    (re.compile(r"\bsystem\s*\("), "awk system() runs a command"),
    (re.compile(r"(?<!\|)\|(?!\|)"), "awk | runs a command (print | CMD, CMD | getline)"),
    (re.compile(r"\bgetline\b[^;\n}]*<"), "awk getline < FILE reads a file it names"),
    (re.compile(r"@(?:load|include)\b"), "awk @load / @include loads code (gawk)"),
    (re.compile(r"\bARG[VC]\b"), "awk ARGV can make it read other files"),
]


def _awk(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _AWK, until_operand=True)
    escapes, paths = effects(tokens, _AWK, None)
    programs = [(t.end - 1, t.value or "") for t in given(tokens, "-e", "--source")]
    for token in given(tokens, "-f", "--file", "-E", "--exec"):
        text = read_text(os.path.join(cwd, os.path.expanduser(token.value or "")))
        if text is None:
            escapes.append(Escape(token.start, token.end, "awk -f names a program the checker cannot read"))
        else:
            programs.append((token.end - 1, text))
    rest = tokens[-1].start if tokens and tokens[-1].option is None else len(words)
    if not programs and rest < len(words):
        programs.append((rest, words[rest]))
        rest += 1
    for index, program in programs:
        reason = _awk_reach(program)
        if reason:
            escapes.append(Escape(index, index + 1, reason))
    for index in range(rest, len(words)):
        if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[index]):
            paths.append(PathUse(index, words[index], "read"))
    return Inspection(tuple(escapes), tuple(paths), changes_files=False)


def _awk_reach(program: str) -> str | None:
    """Why an awk program does more than read its input and print (None when it does not)."""
    code = _awk_code(program)
    for pattern, reason in _AWK_RISKS:
        if pattern.search(code):
            return reason
    for match in re.finditer(r"\bprintf?\b", code):
        depth = 0
        for char in code[match.end() :]:
            if char in ";}\n" and depth == 0:
                break
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == ">" and depth <= 0:
                return "awk print > FILE writes a file it names"
    return None


def _awk_code(program: str) -> str:
    """An awk program with its strings, regular expressions and comments blanked out."""
    out: list[str] = []
    at, previous = 0, ""
    while at < len(program):
        char = program[at]
        if char == '"' or (char == "/" and previous in "(,{};!~&|=:?\n"):
            close = at + 1
            while close < len(program) and program[close] != char and program[close] != "\n":
                close += 2 if program[close] == "\\" else 1
            out.append(" " * (close + 1 - at))
            at, previous = close + 1, "x"
            continue
        if char == "#":
            close = program.find("\n", at)
            at = len(program) if close < 0 else close
            continue
        out.append(char)
        if not char.isspace():
            previous = char
        at += 1
    return "".join(out)


# -- archives and copies: tar(1) GNU, rsync(1), zip(1), unzip(1) ---------------------------------

_TAR = option_table(
    """-f --file -C --directory -I --use-compress-program -T --files-from -X --exclude-from -g
    --listed-incremental -F --info-script --new-volume-script --to-command --checkpoint-action
    --rsh-command --rmt-command --index-file -K --starting-file -N --newer --after-date -L --tape-length
    -V --label -b --blocking-factor -H --format --exclude --transform --xform --strip-components --owner
    --group --mode --mtime --suffix --volno-file --record-size""",
    flags="-P --absolute-names -h --dereference",
    runs={
        "-h --dereference": "tar -h " + _FOLLOWS,
        "-I --use-compress-program": "tar -I / --use-compress-program runs the program it names",
        "--to-command": "tar --to-command runs a command for each member (GNU tar 4.2.1)",
        "--rsh-command --rmt-command": "tar --rsh-command runs the remote shell it names",
        "-F --info-script --new-volume-script": "tar -F runs a script at the end of each volume",
        "-P --absolute-names": "tar -P keeps absolute names and .., so it can write anywhere",
    },
    reads="-T --files-from -X --exclude-from",
    writes="-g --listed-incremental --index-file --volno-file",
    moves="-C --directory",
)
_TAR_CREATES = frozenset(
    {"-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete"}
)
_TAR_TRADITIONAL_VALUES = frozenset("fCITXgFKNLVbH")


def _tar(words: Sequence[str], cwd: str) -> Inspection:
    words, origin = _tar_options(words)
    tokens = scan(words, 1, _TAR)
    escapes, paths = effects(tokens, _TAR, None)
    options = {token.option for token in tokens}
    creates = bool(options & _TAR_CREATES)
    for token in given(tokens, "--checkpoint-action"):
        if "exec" in (token.value or ""):
            escapes.append(Escape(token.start, token.end, "tar --checkpoint-action=exec runs a command"))
    for token in given(tokens, "-T", "--files-from", "-X", "--exclude-from"):
        if token.value == "-":
            escapes.append(Escape(token.start, token.end, "tar -T - takes the names of files from its input"))
    for token in given(tokens, "-f", "--file"):
        archive = token.value or ""
        if ":" in archive.split("/")[0] and "--force-local" not in options:
            escapes.append(Escape(token.start, token.end, "tar -f HOST:FILE reaches another machine"))
        paths.append(PathUse(token.end - 1, archive, "write" if creates else "read"))
    if creates:
        paths += [PathUse(t.start, t.value or "", "read") for t in operands_of(tokens)]
    extracts = bool(options & {"-x", "--extract", "--get"})
    inspection = Inspection(tuple(escapes), tuple(paths), changes_files=creates or extracts)
    return _remap(inspection, origin)


def _tar_options(words: Sequence[str]) -> tuple[list[str], list[int]]:
    """tar's traditional first word (``tar xzf a.tgz``) as dashed options, and each word's original index."""
    if len(words) < 2 or words[1].startswith("-") or not words[1].isalpha():
        return list(words), list(range(len(words)))
    out, origin, following = [words[0]], [0], 2
    for letter in words[1]:
        out.append("-" + letter)
        origin.append(1)
        if letter in _TAR_TRADITIONAL_VALUES and following < len(words):
            out.append(words[following])
            origin.append(following)
            following += 1
    out += words[following:]
    origin += range(following, len(words))
    return out, origin


def _remap(inspection: Inspection, origin: Sequence[int]) -> Inspection:
    """An inspection of rewritten words with indices of the original ones."""

    def last(end: int) -> int:
        return origin[end - 1] + 1

    return replace(
        inspection,
        escapes=tuple(replace(e, start=origin[e.start], end=last(e.end)) for e in inspection.escapes),
        paths=tuple(replace(p, index=origin[p.index]) for p in inspection.paths),
    )


_RSYNC = option_table(
    """--exclude --include -f --filter --chmod --chown --usermap --groupmap --port --sockopts --timeout
    --contimeout --bwlimit --max-size --min-size --modify-window --suffix --iconv --out-format
    --log-file-format --checksum-choice --compress-choice --info --debug --address --outbuf --max-delete
    -B --block-size --stop-after --stop-at --copy-as --skip-compress""",
    flags="--daemon -L --copy-links --copy-unsafe-links -k --copy-dirlinks",
    runs={
        "-e --rsh": "rsync -e runs the remote shell it names (rsync(1))",
        "--rsync-path": "rsync --rsync-path runs the program it names on the other side",
        "-M --remote-option": "rsync -M passes options to the other side",
        "--daemon --config": "rsync --daemon serves files to the network",
        "-L --copy-links --copy-unsafe-links -k --copy-dirlinks": "rsync -L " + _FOLLOWS,
    },
    reads="--files-from --exclude-from --include-from --password-file --read-batch --compare-dest "
    "--copy-dest --link-dest",
    writes="--log-file --write-batch --only-write-batch --backup-dir --partial-dir -T --temp-dir",
)
_REMOTE = re.compile(r"^(?:[^/]*:|rsync://)")


def _rsync(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _RSYNC)
    escapes, paths = effects(tokens, _RSYNC, None)
    operands = operands_of(tokens)
    for token in operands:
        if _REMOTE.match(token.value or ""):
            escapes.append(
                Escape(token.start, token.end, "rsync HOST:PATH copies to or from another machine")
            )
        else:
            last = token is operands[-1] and len(operands) > 1
            paths.append(PathUse(token.start, token.value or "", "write" if last else "read"))
    for token in given(tokens, "--files-from"):
        if token.value == "-":
            escapes.append(Escape(token.start, token.end, "rsync --files-from=- takes names from its input"))
    return Inspection(tuple(escapes), tuple(paths))


_ZIP = option_table(
    "-b --temp-path -n --suffixes -t --from-date -tt --before-date -P --password", writes="-O --output-file"
)


def _zip(words: Sequence[str], cwd: str) -> Inspection:
    escapes = [
        Escape(i, min(i + 2, len(words)), "zip -TT / --unzip-command runs the command it names (zip(1))")
        for i, word in enumerate(words)
        if word.startswith("-TT") or (len(word) > 3 and "--unzip-command".startswith(word.partition("=")[0]))
    ]
    escapes += [
        Escape(i, i + 1, "zip -@ takes the names of files from its input")
        for i, w in enumerate(words)
        if w == "-@"
    ]
    tokens = scan(words, 1, _ZIP)
    more, paths = effects(tokens, _ZIP, None)
    options = {token.option for token in tokens}
    if options & {"-r", "-R", "--recurse-paths", "--recurse-patterns"} and not options & {"-y", "--symlinks"}:
        escapes.append(Escape(1, len(words), "zip -r without -y " + _FOLLOWS + " (zip(1))"))
    operands = operands_of(tokens)
    paths += [PathUse(t.start, t.value or "", "write" if t is operands[0] else "read") for t in operands]
    return Inspection(tuple(escapes + more), tuple(paths))


_UNZIP = option_table("-P -x", writes="-d")


def _unzip(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _UNZIP)
    escapes, paths = effects(tokens, _UNZIP, "read")
    escapes += [
        Escape(t.start, t.end, "unzip -: keeps .. in member names, so it can write outside")
        for t in tokens
        if t.option == "-:"
    ]
    return Inspection(tuple(escapes), tuple(paths))


# -- make (GNU make manual: 3.2 What Name to Give Your Makefile, 3.3 Including Other Makefiles,
#    9.5 Overriding Variables, 9.8 Summary of Options) -------------------------------------------

_MAKE = option_table(
    "-o --old-file --assume-old -W --what-if --new-file --assume-new --jobserver-auth --jobserver-style",
    optional="-j --jobs -l --load-average --max-load -O --output-sync --debug --shuffle",
    runs={"--eval -E": "make --eval evaluates make text, which can run commands"},
    reads="-f --file --makefile -I --include-dir",
    moves="-C --directory",
)
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_ASSIGNMENT = re.compile(r"[^=\s:#]+\s*(?:::?|[+?!])?=")
_INCLUDE = re.compile(r"^[ \t]*(?:-include|sinclude|include)[ \t]+(.*)$", re.MULTILINE)


def _make(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _MAKE)
    escapes, paths = effects(tokens, _MAKE, None)
    directory = ""
    for token in given(tokens, "-C", "--directory"):
        directory = os.path.join(directory, token.value or "")
    for token in operands_of(tokens):
        if _ASSIGNMENT.match(token.value or ""):
            reason = (
                "make NAME=VALUE overrides a variable, which can change what a recipe runs (SHELL, CC...)"
            )
            escapes.append(Escape(token.start, token.end, reason))
        else:
            paths.append(PathUse(token.start, token.value or "", "write"))
    named = [token.value or "" for token in given(tokens, "-f", "--file", "--makefile")]
    makefiles = [os.path.join(directory, name) for name in named or _MAKEFILES]
    searched = [os.path.join(directory, t.value or "") for t in given(tokens, "-I", "--include-dir")]
    recipes = _make_includes(makefiles, cwd, [directory, *searched])
    return Inspection(tuple(escapes), tuple(paths), recipes=tuple(recipes), runs_project=True)


def _make_includes(makefiles: list[str], cwd: str, directories: list[str]) -> list[str]:
    """The makefiles and the files they include by name (make's own search, a few levels deep)."""
    found, queue = list(makefiles), list(makefiles)
    while queue and len(found) < _MAX_INCLUDES:
        text = read_text(os.path.join(cwd, queue.pop(0)))
        for line in _INCLUDE.findall(text or ""):
            for name in line.split("#")[0].split():
                if "$" in name or any(ch in name for ch in "*?["):
                    continue  # named at run time: see the README on what a make rule covers
                for where in directories if not os.path.isabs(name) else [""]:
                    candidate = os.path.join(where, name)
                    if candidate not in found:
                        found.append(candidate)
                        queue.append(candidate)
    return found


# -- package managers and build tools (npm-scripts(7), npm-config(7), pip(1), uv, cargo(1), go(1)) ---

_INSTALLS = "installs the packages it names, which can run their own install or build code"
_NPM = option_table(
    "-w --workspace --registry --tag --otp --location --cache --loglevel --omit --include --before",
    flags="-g --global",
    runs={
        "--script-shell --shell --git --editor --browser --viewer --node-options --node-gyp --init-module "
        "--userconfig --globalconfig --onload-script": "sets a program or configuration npm runs "
        "(npm-config(7): any setting can be given as --NAME=VALUE)",
        "-g --global": "works on the global installation, outside the workspace",
    },
    moves="--prefix -C --dir --cwd",
)
_NPM_RUNS = frozenset(
    {"exec", "x", "dlx", "create", "explore", "edit", "link", "ln", "global", "node", "rebuild"}
)
_NPM_INSTALLS = frozenset(
    {"install", "i", "in", "ins", "inst", "add", "update", "up", "upgrade", "install-test", "it"}
)
_NPM_CONFIG_WRITES = frozenset({"set", "delete", "rm", "edit", "fix", "unset"})
_JS_RECIPES = ("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml")


def _npm(words: Sequence[str], cwd: str) -> Inspection:
    name = program_name(words[0])
    tokens = scan(words, 1, _NPM)
    escapes, paths = effects(tokens, _NPM, None)
    operands = operands_of(tokens)
    for token in given(tokens, "--location"):
        if token.value == "global":
            escapes.append(
                Escape(token.start, token.end, f"{name} --location=global works outside the workspace")
            )
    sub = operands[0] if operands else None
    if sub is not None and (sub.value in _NPM_RUNS or (sub.value == "init" and len(operands) > 1)):
        escapes.append(Escape(sub.start, len(words), f"{name} {sub.value} runs a package's program"))
    elif sub is not None and (
        sub.value == "set"
        or (sub.value in ("config", "c") and len(operands) > 1 and operands[1].value in _NPM_CONFIG_WRITES)
    ):
        escapes.append(
            Escape(sub.start, len(words), f"{name} config writes configuration that can name programs")
        )
    elif sub is not None and sub.value in _NPM_INSTALLS and "--ignore-scripts" not in words:
        for token in operands[1:]:
            if not looks_like_path(token.value or ""):
                escapes.append(Escape(token.start, token.end, f"{name} {sub.value} {_INSTALLS}"))
    if name == "bun":
        escapes += [
            Escape(t.start, len(words), "bun -e runs code given in its arguments")
            for t in given(tokens, "-e", "--eval", "-p", "--print")
        ]
    prefix = next((t.value or "" for t in given(tokens, *_NPM.moves)), "")
    recipes = [os.path.join(prefix, recipe) for recipe in _JS_RECIPES]
    return Inspection(tuple(escapes), tuple(paths), recipes=tuple(recipes), runs_project=True)


_PIP = option_table(
    "-e --editable -i --index-url --extra-index-url -f --find-links --python-version --platform "
    "--implementation --abi --only-binary --no-binary --progress-bar --config-settings -C --trusted-host",
    flags="--user",
    runs={"--user": "pip --user installs into the user's site directory, outside the workspace"},
    reads="-r --requirement -c --constraint",
    writes="-t --target --prefix --root --src --cache-dir --log --report -d --dest -w --wheel-dir",
)


def _pip(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _PIP)
    escapes, paths = effects(tokens, _PIP, None)
    operands = operands_of(tokens)
    sub = operands[0] if operands else None
    recipes = [t.value or "" for t in given(tokens, "-r", "--requirement")]
    if sub is not None and sub.value in ("install", "download", "wheel"):
        for token in [*operands[1:], *given(tokens, "-e", "--editable")]:
            value = token.value or ""
            if looks_like_path(value):
                recipes += [os.path.join(value, name) for name in ("pyproject.toml", "setup.py", "setup.cfg")]
            else:
                escapes.append(Escape(token.start, token.end, f"pip {sub.value} {_INSTALLS}"))
    elif (
        sub is not None
        and sub.value == "config"
        and len(operands) > 1
        and operands[1].value not in ("list", "get", "debug")
    ):
        escapes.append(Escape(sub.start, len(words), "pip config writes configuration"))
    return Inspection(tuple(escapes), tuple(paths), recipes=tuple(recipes), runs_project=bool(recipes))


_PY_RECIPES = ("pyproject.toml", "uv.toml", "uv.lock", "setup.py", "setup.cfg", "poetry.lock", "poetry.toml")
_UV = option_table(
    "--python -p --index --default-index --index-url --extra-index-url --find-links -f --cache-dir "
    "--color --package --extra --group --only-group",
    runs={
        "--with --with-editable --with-requirements": "uv run --with installs the packages it names",
        "--env-file": "uv run --env-file sets the environment of the command it runs",
        "--config-file": "uv --config-file reads configuration from another file",
    },
    moves="--directory --project",
)


_UV_INSTALLS = names("add tool pip python self x exec shell")


def _uv(words: Sequence[str], cwd: str) -> Inspection:
    name = program_name(words[0])
    tokens = scan(words, 1, _UV, until_operand=True)
    escapes, paths = effects(tokens, _UV, None)
    sub = tokens[-1] if tokens and tokens[-1].option is None else None
    if sub is not None and sub.value == "run":
        rest = scan(words, sub.end, _UV, until_operand=True)
        more, _ = effects(rest, _UV, None)
        escapes += more
        start = rest[-1].start if rest and rest[-1].option is None else len(words)
        if start < len(words):
            inner = tuple(words[start:]) if start == sub.end else None
            escapes.append(Escape(start, len(words), f"{name} run runs the command that follows it", inner))
    elif (
        sub is not None
        and sub.value in _UV_INSTALLS
        and not (
            sub.value == "pip"
            and sub.end < len(words)
            and words[sub.end] in ("list", "show", "freeze", "tree")
        )
    ):
        reason = f"{name} {sub.value} installs or runs the packages it names"
        escapes.append(Escape(sub.start, len(words), reason))
    return Inspection(tuple(escapes), tuple(paths), recipes=_PY_RECIPES, runs_project=True)


_CARGO = option_table(
    "-p --package --features -F -j --jobs --target --profile --color --bin --example --test --bench "
    "--lockfile-path --message-format",
    runs={"--config": "cargo --config sets configuration that can name programs (runner, rustc-wrapper)"},
    moves="-C --manifest-path",
    writes="--target-dir",
)
_CARGO_BUILTINS = names(
    """build b check c clean doc d new init add remove run r test t bench update search publish tree vendor
    fetch generate-lockfile locate-project metadata pkgid verify-project version yank owner login logout
    package report fix help info fmt clippy"""
)
"""cargo(1) COMMANDS (and rustup's fmt and clippy); any other is an alias from .cargo/config.toml or
a cargo-NAME program."""
_CARGO_RECIPES = (
    "Cargo.toml",
    "build.rs",
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain",
    "rust-toolchain.toml",
)


def _cargo(words: Sequence[str], cwd: str) -> Inspection:
    start = 2 if len(words) > 1 and words[1].startswith("+") else 1
    tokens = scan(words, start, _CARGO, until_operand=True)
    escapes, paths = effects(tokens, _CARGO, None)
    sub = tokens[-1] if tokens and tokens[-1].option is None else None
    if sub is not None:
        rest = scan(words, sub.end, _CARGO)
        more, more_paths = effects(rest, _CARGO, None)
        escapes += more
        paths += more_paths
        if sub.value in ("install", "uninstall"):
            escapes.append(Escape(sub.start, len(words), f"cargo {sub.value} installs outside the workspace"))
        elif sub.value not in _CARGO_BUILTINS:
            reason = f"cargo {sub.value} is an alias or a cargo-{sub.value} program"
            escapes.append(Escape(sub.start, sub.end, reason))
        if sub.value in ("rustc", "rustdoc") and "--" in words[sub.end :]:
            escapes.append(
                Escape(
                    words.index("--", sub.end),
                    len(words),
                    "cargo rustc -- passes flags to rustc, which can name a linker",
                )
            )
    return Inspection(tuple(escapes), tuple(paths), recipes=_CARGO_RECIPES, runs_project=True)


_GO = option_table(
    "-p -tags -ldflags -gcflags -asmflags -gccgoflags -mod -buildmode -compiler -installsuffix -run -bench "
    "-count -timeout -covermode -coverpkg -pgo -cpu -parallel -shuffle -skip -benchtime -fuzz -fuzztime",
    runs={
        "-exec": "go -exec runs the program through another program (go help run)",
        "-toolexec": "go -toolexec runs the toolchain through another program (go help build)",
        "-vettool": "go vet -vettool runs the program it names",
    },
    moves="-C",
    reads="-modfile -overlay",
    writes="-o -pkgdir -coverprofile -cpuprofile -memprofile -blockprofile -mutexprofile -trace -outputdir",
    abbreviations=False,
    single_dash=True,
)


def _go(words: Sequence[str], cwd: str) -> Inspection:
    tokens = scan(words, 1, _GO)
    escapes, paths = effects(tokens, _GO, None)
    operands = operands_of(tokens)
    sub = operands[0] if operands else None
    for token in given(tokens, "-ldflags", "--ldflags"):
        if "extld" in (token.value or ""):
            escapes.append(Escape(token.start, token.end, "go -ldflags=-extld runs the linker it names"))
    if sub is not None and sub.value in ("generate", "tool"):
        escapes.append(Escape(sub.start, len(words), f"go {sub.value} runs the commands the source names"))
    elif (
        sub is not None and sub.value == "env" and any(t.option in ("-w", "-u", "--w", "--u") for t in tokens)
    ):
        escapes.append(
            Escape(sub.start, len(words), "go env -w writes configuration (GOFLAGS can name programs)")
        )
    elif sub is not None and sub.value in ("run", "install", "get"):
        for token in operands[1:]:
            if "@" in (token.value or ""):
                escapes.append(
                    Escape(token.start, token.end, f"go {sub.value} PKG@VERSION downloads and runs a module")
                )
    return Inspection(tuple(escapes), tuple(paths), recipes=("go.mod", "go.work"), runs_project=True)


_BAZEL_RECIPES = (
    "BUILD",
    "BUILD.bazel",
    "WORKSPACE",
    "WORKSPACE.bazel",
    "MODULE.bazel",
    ".bazelrc",
    ".bazelversion",
)
"""What bazel and bazelisk (which runs bazel) take their commands from."""
_PROJECT_RECIPES: dict[str, tuple[str, ...]] = {
    "just": ("justfile", ".justfile", "Justfile"),
    "rake": ("Rakefile", "rakefile", "Rakefile.rb", "rakefile.rb"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"),
    "tox": ("tox.ini", "pyproject.toml", "setup.cfg"),
    "nox": ("noxfile.py",),
    "invoke": ("tasks.py", "invoke.yaml"),
    "inv": ("tasks.py", "invoke.yaml"),
    "pytest": ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "conftest.py"),
    "py.test": ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "conftest.py"),
    "pre-commit": (".pre-commit-config.yaml",),
    "poetry": ("pyproject.toml", "poetry.lock", "poetry.toml"),
    "pdm": ("pyproject.toml", "pdm.lock"),
    "hatch": ("pyproject.toml", "hatch.toml"),
    "gradle": (
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "gradle.properties",
    ),
    "gradlew": ("gradlew", "gradle/wrapper/gradle-wrapper.properties", "build.gradle", "build.gradle.kts"),
    "mvn": ("pom.xml", ".mvn/maven.config", ".mvn/jvm.config", ".mvn/extensions.xml"),
    "mvnw": ("mvnw", ".mvn/wrapper/maven-wrapper.properties", "pom.xml"),
    "ant": ("build.xml",),
    "cmake": ("CMakeLists.txt", "CMakePresets.json", "CMakeUserPresets.json"),
    "meson": ("meson.build", "meson_options.txt", "meson.options"),
    "ninja": ("build.ninja",),
    "bazel": _BAZEL_RECIPES,
    "bazelisk": _BAZEL_RECIPES,
    "composer": ("composer.json",),
    "bundle": ("Gemfile", ".bundle/config"),
    "mix": ("mix.exs",),
    "swift": ("Package.swift",),
    "deno": ("deno.json", "deno.jsonc", "package.json"),
    "dotnet": ("global.json", "Directory.Build.props", "Directory.Build.targets", "NuGet.Config"),
}
"""Build and test tools and the files they take the commands they run from (each tool's manual)."""


def _project_tool(words: Sequence[str], cwd: str) -> Inspection:
    generic = _generic(words, "write")
    recipes = _PROJECT_RECIPES[program_name(words[0])]
    return replace(generic, recipes=recipes, runs_project=True)


# -- remote shells, pagers, editors (ssh(1), ssh_config(5), scp(1), less(1), man(1), vim(1), emacs(1)) --

_SSH_RUN_KEYS = names(
    """proxycommand localcommand permitlocalcommand knownhostscommand match pkcs11provider
    securitykeyprovider proxyusefdpass include"""
)
_SSH = option_table(
    "-b -c -D -e -J -L -l -m -O -o -p -Q -R -W -w -B -P -S",
    runs={
        "-F": "ssh -F reads configuration from a file, which can name programs to run (ssh_config(5))",
        "-I": "ssh -I loads a PKCS#11 library",
    },
    reads="-i",
    writes="-E",
    abbreviations=False,
)


def _ssh(words: Sequence[str], cwd: str) -> Inspection:
    name = program_name(words[0])
    options = _SSH
    if name in ("scp", "sftp"):
        runs = {
            **_SSH.runs,
            "-S": f"{name} -S runs the program it names as ssh",
            "-D": f"{name} -D runs the server program it names",
        }
        if name == "sftp":
            runs["-b"] = "sftp -b runs a batch, which can run local commands (sftp(1) !command)"
        options = replace(_SSH, runs=runs)
    tokens = scan(words, 1, options, until_operand=name == "ssh")
    if name == "ssh" and tokens and tokens[-1].option is None:  # options may follow the destination
        tokens += scan(words, tokens[-1].end, options, until_operand=True)
    escapes, paths = effects(tokens, options, None)
    for token in given(tokens, "-o"):
        key = re.split(r"[\s=]", (token.value or "").strip(), maxsplit=1)[0].lower()
        if key in _SSH_RUN_KEYS:
            escapes.append(
                Escape(token.start, token.end, f"{name} -o {key} names a program to run (ssh_config(5))")
            )
    if name == "scp":
        operands = operands_of(tokens)
        for token in operands:
            if not _REMOTE.match(token.value or ""):
                paths.append(
                    PathUse(token.start, token.value or "", "write" if token is operands[-1] else "read")
                )
    return Inspection(tuple(escapes), tuple(paths))


_LESS = option_table(
    "-b --buffers -h --max-back-scroll -j --jump-target -P --prompt -p --pattern -t --tag -x --tabs -y "
    "--max-forw-scroll -z --window -# --shift",
    runs={
        "-k --lesskey-file --lesskey-src --lesskey-content": "less -k reads key bindings, which can set "
        "LESSOPEN to run a command (less(1))",
    },
    reads="-T --tag-file",
    writes="-o -O --log-file --LOG-FILE",
)
_MAN = option_table(
    "-L --locale -m --systems -S -s --sections -e --extension -R --recode -E --encoding -p --preprocessor",
    optional="-T --troff-device -H --html -X --gxditview",
    runs={
        "-P --pager": "man -P runs the pager it names",
        "-H --html": "man -H runs the browser it names",
        "-X --gxditview": "man -X runs gxditview",
        "-C --config-file": "man -C reads configuration that names programs",
    },
    reads="-M --manpath",
)
_VIM = option_table(
    "-T -t -q --servername -r -L",
    optional="-S",
    runs={
        "-c --cmd": "vim -c runs an Ex command, which can run a shell (vim(1))",
        "-S": "vim -S sources a script",
        "-u -U": "vim -u reads another vimrc",
        "-s": "vim -s replays keystrokes from a file",
        "--remote --remote-silent --remote-wait --remote-tab --remote-send --remote-expr": "vim --remote "
        "sends commands to another Vim",
    },
    writes="-w -W -i",
    abbreviations=False,
)
_EMACS_RUNS = names(
    "--eval -eval -l --load -load -f --funcall -funcall --script -scriptload -x -u --user --init-directory "
    "--daemon --bg-daemon --fg-daemon --chdir"
)
_NANO = option_table(
    runs={"-f --rcfile": "nano --rcfile reads configuration that names programs (speller, linter)"}
)


def _by_options(
    options: Options, operands: PathKind, *, changes: bool, plus: str = ""
) -> Callable[[Sequence[str], str], Inspection]:
    """An analyzer from an options table; ``plus``: why a ``+CMD`` word (a line number or a search
    aside) runs a command (less(1), vim(1))."""

    def analyze(words: Sequence[str], cwd: str) -> Inspection:
        tokens = scan(words, 1, options)
        escapes, paths = effects(tokens, options, operands)
        escapes += [
            Escape(index, index + 1, plus)
            for index, word in enumerate(words[1:], 1)
            if plus and word.startswith("+") and not word[1:].isdigit() and not word.startswith("+/")
        ]
        paths = [use for use in paths if not use.path.startswith("+")]
        return Inspection(tuple(escapes), tuple(paths), changes_files=changes)

    return analyze


def _emacs(words: Sequence[str], cwd: str) -> Inspection:
    for index, word in enumerate(words[1:], 1):
        if word.partition("=")[0] in _EMACS_RUNS:
            return Inspection(
                (Escape(index, len(words), f"emacs {word.partition('=')[0]} runs Lisp (emacs(1))"),)
            )
    return _generic(words, "write")


_DOCKER_READS = names("ps images logs inspect version info stats top port history events search diff")
_KUBECTL_READS = names("get describe logs version explain api-resources api-versions cluster-info top")


def _containers(words: Sequence[str], cwd: str) -> Inspection:
    """docker(1), podman(1), kubectl: a daemon or a cluster does what they ask, which can reach the whole
    machine (``docker run -v /:/host``): only commands that show things are covered."""
    name = program_name(words[0])
    safe = _KUBECTL_READS if name == "kubectl" else _DOCKER_READS
    if len(words) < 2:
        return Inspection(changes_files=False)
    if words[1] not in safe:
        return Inspection((Escape(1, len(words), f"{name} {words[1]} runs or changes containers"),))
    return Inspection(changes_files=False)


# -- interpreters and shells (python(1), node(1), perl(1) perlrun, ruby(1), php(1), bash(1)) ------

_INTERPRETER_RUNS: dict[str, dict[str, str]] = {
    "node": {
        "--env-file": "node --env-file sets the environment from a file",
        "--inspect": "node --inspect opens a debugger that runs code sent to it",
        "--inspect-brk": "node --inspect opens a debugger that runs code sent to it",
        "--inspect-wait": "node --inspect opens a debugger that runs code sent to it",
    },
    "perl": {
        "-M": "perl -M puts its text in a use statement, which runs code",
        "-m": "perl -m runs code",
        "-E": "perl -E runs code given in its arguments",
    },
    "php": {
        "-S": "php -S serves the workspace and runs its scripts",
        "-d": "php -d sets ini entries that run code",
        "-B": "php -B runs code given in its arguments",
        "-R": "php -R runs code given in its arguments",
        "-E": "php -E runs code given in its arguments",
    },
    "bash": {
        "--rcfile": "bash --rcfile runs startup commands from a file",
        "--init-file": "bash --init-file runs startup commands from a file",
    },
}


def _interpreter(words: Sequence[str], cwd: str) -> Inspection:
    """The script an interpreter runs is the project's code (not a recipe: it is what the agent
    edits); inline code and the options that load code or open a door run something else."""
    name = program_name(words[0])
    runs = _INTERPRETER_RUNS.get("node" if name == "nodejs" else name, {})
    escapes = []
    kind, index = code_source(words)
    for at, word in enumerate(words[1:index], 1):
        option = word.partition("=")[0]
        if option in runs or (word[:2] in runs and not word.startswith("--")):
            escapes.append(Escape(at, at + 1, runs.get(option) or runs[word[:2]]))
    if kind == "inline":
        escapes.append(Escape(index, len(words), f"{name} {words[index]} runs code given in its arguments"))
        return Inspection(tuple(escapes))
    if kind != "script":
        return Inspection(tuple(escapes), changes_files=False)
    rest = [PathUse(i, words[i], "write") for i in range(index + 1, len(words))]
    if words[index - 1] == "-m":
        delegate = _ANALYZERS.get(words[index])
        if delegate is not None:  # python -m pip ...: the module's own table
            inner = _remap(delegate(words[index:], cwd), range(index, len(words)))
            return replace(inner, escapes=(*escapes, *inner.escapes), runs_project=True)
        return Inspection(tuple(escapes), tuple(rest), runs_project=True)
    return Inspection(tuple(escapes), (PathUse(index, words[index], "read"), *rest), runs_project=True)


# -- the rest ---------------------------------------------------------------------------------------

_NO_FILES = names(
    "echo printf true false : pwd whoami id uname nproc arch tty seq sleep yes expr basename dirname which "
    "type hash logname groups"
)
"""Programs whose words are never files."""
_READERS = names(
    """cat tac head tail grep egrep fgrep zgrep wc diff cmp comm ls dir vdir stat file du md5sum sha1sum
    sha224sum sha256sum sha384sum sha512sum b2sum cksum sum od hexdump strings readlink realpath nl cut
    paste column jq zcat bzcat xzcat zstdcat fold fmt rev expand unexpand pr join look base64 base32
    basenc more"""
)
"""Programs that only read the files they name (coreutils, grep(1), diff(1), jq(1)...)."""
_KEEPS_FILES = frozenset({*_NO_FILES, *_READERS, "mkdir", "touch", "rm", "rmdir", *_DIRECTORY_CHANGERS})
"""Programs that create or replace no file a later command could be fooled by (a link, a makefile)."""
_GREP = option_table(
    "-e --regexp -m --max-count -A --after-context -B --before-context -C --context -d --directories -D "
    "--devices --label --include --exclude --exclude-dir --color --colour --binary-files",
    flags="-R --dereference-recursive",
    runs={"-R --dereference-recursive": "grep -R " + _FOLLOWS + " (grep(1))"},
    reads="-f --file --exclude-from",
)
_CP = option_table(
    "-S --suffix --backup --sparse --reflink --preserve --no-preserve",
    flags="-L --dereference",
    runs={"-L --dereference": "cp -L " + _FOLLOWS + " (cp(1))"},
    writes="-t --target-directory",
)
_RG = option_table(
    "-e --regexp -g --glob -t --type -T --type-not -m --max-count -A -B -C --context -j --threads -M "
    "--max-columns --sort --sortr -E --encoding -r --replace --max-depth -d --type-add",
    flags="-L --follow",
    runs={
        "-L --follow": "rg -L " + _FOLLOWS,
        "--pre": "rg --pre runs a preprocessor on each file (rg(1))",
        "--hostname-bin": "rg --hostname-bin runs the program it names",
    },
    reads="-f --file --ignore-file",
)


def _generic(words: Sequence[str], kind: PathKind, options: Options | None = None) -> Inspection:
    options = options or option_table()
    tokens = scan(words, 1, options)
    escapes, paths = effects(tokens, options, kind)
    return Inspection(tuple(escapes), tuple(paths), changes_files=program_name(words[0]) not in _KEEPS_FILES)


def _directory_change(words: Sequence[str], cwd: str) -> Inspection:
    """bash(1) cd, pushd, popd: where the script's later commands run (``cd`` alone: the home directory)."""
    name = program_name(words[0])
    operands = [i for i in range(1, len(words)) if not words[i].startswith("-") or words[i] == "-"]
    if name == "popd":
        return Inspection(changes_files=False)
    if not operands:
        return Inspection(paths=(PathUse(len(words), "~", "move"),), changes_files=False, directory="~")
    if words[operands[0]] == "-":
        reason = f"{name} - returns to the directory the agent was started from"
        return Inspection((Escape(operands[0], operands[0] + 1, reason),), changes_files=False)
    target = words[operands[0]]
    return Inspection(paths=(PathUse(operands[0], target, "move"),), changes_files=False, directory=target)


_ANALYZERS: dict[str, Callable[[Sequence[str], str], Inspection]] = {
    "git": _git,
    "find": _find,
    "xargs": _xargs,
    **{name: _runner for name in _RUNNERS},
    **{name: _opaque for name in _OPAQUE},
    "sed": _sed,
    "gsed": _sed,
    **{name: _awk for name in ("awk", "gawk", "mawk", "nawk")},
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "rsync": _rsync,
    "zip": _zip,
    "unzip": _unzip,
    **{name: _make for name in ("make", "gmake", "bmake")},
    **{name: _npm for name in ("npm", "pnpm", "yarn", "bun")},
    **{name: _pip for name in ("pip", "pip3")},
    "uv": _uv,
    "cargo": _cargo,
    "go": _go,
    **{name: _project_tool for name in _PROJECT_RECIPES},
    **{name: _ssh for name in ("ssh", "scp", "sftp")},
    "less": _by_options(
        _LESS, "read", changes=False, plus="less +CMD runs a command at start (! runs a shell)"
    ),
    "man": _by_options(_MAN, "read", changes=False),
    **{
        name: _by_options(
            _VIM, "write", changes=True, plus="vim +CMD runs an Ex command, which can run a shell"
        )
        for name in ("vim", "vi", "nvim", "view", "vimdiff", "gvim", "ex")
    },
    "emacs": _emacs,
    "nano": _by_options(_NANO, "write", changes=True),
    **{name: _containers for name in ("docker", "podman", "nerdctl", "kubectl")},
    "rg": _by_options(_RG, "read", changes=False),
    **{name: _by_options(_GREP, "read", changes=False) for name in ("grep", "egrep", "fgrep")},
    "cp": _by_options(_CP, "write", changes=True),
    **{name: _directory_change for name in _DIRECTORY_CHANGERS},
}


def inspect(words: Sequence[str], cwd: str) -> Inspection:
    """What the simple command ``words``, run in ``cwd``, does beyond its program's own work."""
    name = program_name(words[0])
    analyzer = _ANALYZERS.get(name)
    if analyzer is not None:
        return analyzer(words, cwd)
    if name in INTERPRETERS:
        return _interpreter(words, cwd)
    if name in _NO_FILES:
        return Inspection(changes_files=False)
    return _generic(words, "read" if name in _READERS else "write")


class RunningOption(NamedTuple):
    """One option the tables say runs another program (or moves the program elsewhere)."""

    program: str
    before: tuple[str, ...]
    """The words between the program and the option: the subcommand it belongs to (``grep`` for
    ``git grep -O``), or none."""
    option: str
    takes_value: bool
    optional: bool
    """It takes a value only glued (``--exec-path=DIR``); it runs without one too unless ``bare_is_harmless``."""
    bare_is_harmless: bool
    abbreviates: bool
    single_dash: bool
    permutes: bool
    """It still counts after operands (GNU getopt permutes them); else it must come before them."""


def running_options() -> list[RunningOption]:
    """Every option the tables say runs another program or moves the program, to test and to read."""
    tables: list[tuple[str, tuple[str, ...], Options, bool]] = [("git", (), _GIT, False)]
    tables += [("git", (sub,), options, True) for sub, options in _GIT_SUBCOMMANDS.items()]
    tables += [("env", (), _RUNNERS["env"].options, False), ("npx", (), _RUNNERS["npx"].options, False)]
    tables += [("tar", (), _TAR, True), ("rsync", (), _RSYNC, True), ("make", (), _MAKE, True)]
    tables += [("npm", ("test",), _NPM, True), ("ssh", (), _SSH, False), ("less", (), _LESS, True)]
    tables += [
        ("man", (), _MAN, True),
        ("vim", (), _VIM, True),
        ("awk", (), _AWK, False),
        ("rg", (), _RG, True),
    ]
    tables += [("cargo", ("build",), _CARGO, True), ("go", ("build",), _GO, True), ("uv", (), _UV, False)]
    tables += [("nano", (), _NANO, True)]
    return [
        RunningOption(
            program,
            before,
            option,
            option in options.values,
            option in options.optional,
            option in _ONLY_WITH_A_VALUE,
            options.abbreviations,
            options.single_dash,
            permutes,
        )
        for program, before, options, permutes in tables
        for option in options.runs
    ]


def running_subcommands() -> list[str]:
    """The git commands whose purpose is to run another program (never covered by ``bash:git *``)."""
    return sorted(_GIT_RUNS)
