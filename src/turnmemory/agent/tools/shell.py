"""``bash``: run a shell command in the workspace, inside the OS sandbox when there is one.

With a sandbox (:mod:`turnmemory.agent.bash._sandbox`) the command is contained: it sees the workspace and
the system's programs and nothing else, and has no network, so a plain command runs without asking.
A command that needs more sets ``escalate`` with a justification; it then runs on the host, and only
when the permission rules (or the user) allow it.

stdout and stderr go straight to spill files (0600, in the agent's private spill directory, deleted
when the turn ends), so a command that prints gigabytes costs disk, not memory, and at most
:data:`MAX_OUTPUT_BYTES` of it. The model gets each stream whole when it is small, otherwise its head
and tail and the path of the full file (which ``read_file`` may read during the turn).

The command runs with stdin closed, behind a gate that lets it start only once a watchdog knows it
(:mod:`._reaper`); everything it started is killed when it ends (its background processes and
daemons end with it), times out, prints too much, or the turn is interrupted, and by the watchdog if
the agent dies. A host command gets the agent's environment without the agent's credentials
(:mod:`turnmemory.agent._credentials`); after a contained one, what it left that host git would run is
set aside before anything else runs (:mod:`turnmemory.agent.bash._git_guard`). A timeout is a tool error;
a non-zero exit is a completed call with ``failed_command``.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from turnmemory.agent._credentials import host_environment
from turnmemory.agent.bash import dangerous_reason
from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError, int_argument
from turnmemory.agent.tools._reaper import hold
from turnmemory.agent.tools._schema import arguments, boolean, integer, string

__all__ = ["BASH", "DEFAULT_TIMEOUT", "MAX_OUTPUT_BYTES", "MAX_STREAM_BYTES", "MAX_TIMEOUT", "run_command"]

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
MAX_STREAM_BYTES = 30_000
"""The most of one stream the model sees inline: the first third and the last two thirds."""
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
"""The most a command may print (both streams together) before it is killed."""
_HEAD = MAX_STREAM_BYTES // 3
_POLL = 0.05
_SYSTEM_PATH = "/usr/bin:/bin"
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "GIT_TERMINAL_PROMPT": "0"}
_SANDBOX_HINT = (
    "ran in the sandbox (no network, workspace only); if it needs more, escalate with a justification"
)


def _prepare_bash(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    command: str = arguments["command"]
    if not command.strip():
        raise ToolError("command is empty")
    timeout = int_argument(arguments, "timeout", DEFAULT_TIMEOUT, 1, MAX_TIMEOUT)
    escalation = None
    if ctx.sandbox is not None and arguments.get("escalate"):
        escalation = " ".join(str(arguments.get("justification", "")).split())
        if not escalation:
            raise ToolError("escalate needs a justification: say in one line what the command needs")
    contained = ctx.sandbox is not None and escalation is None
    return Action(
        run=lambda: run_command(command, timeout, ctx, contained=contained),
        access=Access(
            "bash", command, dangerous=dangerous_reason(command), contained=contained, escalation=escalation
        ),
    )


def run_command(command: str, timeout: float, ctx: ToolContext, *, contained: bool = True) -> dict[str, Any]:
    """Run ``command`` with ``bash -c`` in the workspace (in ``ctx``'s sandbox when ``contained``)."""
    sandbox = ctx.sandbox if contained else None
    settle: Callable[[], list[str]] = list
    if sandbox is None:
        shell = shutil.which("bash") or "/bin/sh"
        argv, env = [shell, "-c", command], host_environment(_QUIET_ENV)
    else:  # a bash the sandbox shows (the system's, not one under the home directory)
        shell = shutil.which("bash", path=_SYSTEM_PATH) or "/bin/sh"
        wrapped = sandbox.command([shell, "-c", command])
        argv, env, settle = wrapped.argv, sandbox.environment(_QUIET_ENV), wrapped.settle
    try:
        stdout_path, stderr_path = ctx.spill_path("stdout.txt"), ctx.spill_path("stderr.txt")
        stdout, stderr = _private_file(stdout_path), _private_file(stderr_path)
        try:
            held = hold(
                argv, cwd=ctx.workspace, env=env, stdout=stdout, stderr=stderr, contained=sandbox is not None
            )
            try:
                code, stopped = _wait(held.process, timeout, (stdout, stderr))
            finally:
                held.end()
        finally:
            os.close(stdout)
            os.close(stderr)
    finally:
        notes = settle()  # what the command left that host git would run is gone before anything else runs
    if stopped is not None:
        kept = [path for path in (stdout_path, stderr_path) if _keep_if_nonempty(path)]
        where = f"; partial output in {', '.join(kept)}" if kept else ""
        raise ToolError("; ".join([f"{stopped} and its process group was killed{where}", *notes]))
    exit_code = code if code >= 0 else 128 - code
    output: dict[str, Any] = {"command": command, "exit_code": exit_code}
    truncated = False
    for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
        text, spilled = _stream(path)
        if text or name == "stdout":
            output[name] = text
        if spilled:
            output[f"{name}_file"] = path
            truncated = True
    output["truncated"] = truncated
    if exit_code != 0:
        output["failed_command"] = command
        if sandbox is not None:
            notes.append(_SANDBOX_HINT)
    if notes:
        output["note"] = "; ".join(notes)
    return output


def _private_file(path: str) -> int:
    """A new spill file only this user can read, opened for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o600)


def _wait(
    process: subprocess.Popen[bytes], timeout: float, outputs: tuple[int, int]
) -> tuple[int, str | None]:
    """The exit status, or why the command was stopped (its time limit, too much output)."""
    deadline = time.monotonic() + timeout
    with _exit_waiter(process) as wait_exit:
        while True:
            wait_exit(min(_POLL, max(deadline - time.monotonic(), 0)))
            code = process.poll()
            if code is not None:
                return code, None
            if sum(os.fstat(fd).st_size for fd in outputs) > MAX_OUTPUT_BYTES:
                return -1, f"command printed more than {MAX_OUTPUT_BYTES} bytes"
            if time.monotonic() >= deadline:
                return -1, f"command timed out after {timeout:g} s"


@contextlib.contextmanager
def _exit_waiter(process: subprocess.Popen[bytes]) -> Iterator[Callable[[float], object]]:
    """Waits up to some seconds for ``process`` to exit, returning as soon as it does (a pidfd on
    Linux; elsewhere ``Popen.wait``, whose polling sleeps up to 50 ms past the exit)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):

        def wait(seconds: float) -> None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(seconds)

        yield wait
        return
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        yield lambda seconds: poller.poll(seconds * 1000)
    finally:
        os.close(pidfd)


def _keep_if_nonempty(path: str) -> bool:
    if os.path.getsize(path):
        return True
    os.unlink(path)
    return False


def _stream(path: str) -> tuple[str, bool]:
    """A captured stream for the model, and whether the full file was kept because it was cut."""
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        if size <= MAX_STREAM_BYTES:
            data = handle.read(MAX_STREAM_BYTES)
            os.unlink(path)
            return data.decode("utf-8", "replace"), False
        head = handle.read(_HEAD)
        handle.seek(size - (MAX_STREAM_BYTES - _HEAD))
        tail = handle.read(MAX_STREAM_BYTES - _HEAD)
    skipped = size - len(head) - len(tail)
    marker = f"\n[... {skipped} bytes omitted; the full output ({size} bytes) is in {path} ...]\n"
    return head.decode("utf-8", "ignore") + marker + tail.decode("utf-8", "ignore"), True


BASH = Tool(
    name="bash",
    description=(
        "Run a shell command with bash in the workspace (stdin closed, no terminal). Returns exit_code, "
        "stdout and stderr; long outputs are cut to their head and tail and the full text is saved to a "
        "file you may read with read_file during this turn. A non-zero exit is reported, not an error; a "
        "timeout kills the command, and background processes end with it. When a sandbox is in use, "
        "commands run contained: the workspace and the system's programs only, no network, a private /tmp "
        "and HOME. A command that needs more (the network, files outside the workspace) may set escalate "
        "with a justification: it then runs outside the sandbox if the user allows it."
    ),
    input_schema=arguments(
        {
            "command": string("The command line to run.", non_empty=True),
            "timeout": integer(
                f"Seconds before the command is killed. Default {DEFAULT_TIMEOUT}.", 1, MAX_TIMEOUT
            ),
            "escalate": boolean("Run outside the sandbox (needs a justification and the user's permission)."),
            "justification": string("With escalate: one line on what the command needs outside the sandbox."),
        },
        "command",
    ),
    prepare=_prepare_bash,
)
