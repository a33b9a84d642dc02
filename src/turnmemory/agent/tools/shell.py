"""``bash``: run a shell command in the workspace.

stdout and stderr go straight to files in the spill directory, so a command that prints gigabytes
costs disk, not memory. The model gets each stream whole when it is small, otherwise its head and
tail and the path of the full file (which ``read_file`` may read). The command runs in its own
process group with stdin closed; on timeout, or when the turn is interrupted, the whole group is
killed. A timeout is a tool error; a non-zero exit is a completed call with ``failed_command``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from typing import Any

from turnmemory.agent.permissions import Access, dangerous_reason
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError, int_argument

__all__ = ["BASH", "DEFAULT_TIMEOUT", "MAX_STREAM_BYTES", "MAX_TIMEOUT", "run_command"]

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
MAX_STREAM_BYTES = 30_000
"""The most of one stream the model sees inline: the first third and the last two thirds."""
_HEAD = MAX_STREAM_BYTES // 3
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "GIT_TERMINAL_PROMPT": "0"}


def _prepare_bash(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    command: str = arguments["command"]
    if not command.strip():
        raise ToolError("command is empty")
    timeout = int_argument(arguments, "timeout", DEFAULT_TIMEOUT, 1, MAX_TIMEOUT)
    return Action(
        run=lambda: run_command(command, timeout, ctx),
        access=Access("bash", command, dangerous=dangerous_reason(command)),
    )


def run_command(command: str, timeout: float, ctx: ToolContext) -> dict[str, Any]:
    """Run ``command`` with ``bash -c`` in the workspace; the ``bash`` tool's output."""
    shell = shutil.which("bash") or "/bin/sh"
    stdout_path, stderr_path = ctx.spill_path("stdout.txt"), ctx.spill_path("stderr.txt")
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [shell, "-c", command],
            cwd=ctx.workspace,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            env={**os.environ, **_QUIET_ENV},
        )
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            kept = [path for path in (stdout_path, stderr_path) if _keep_if_nonempty(path)]
            where = f"; partial output in {', '.join(kept)}" if kept else ""
            raise ToolError(
                f"command timed out after {timeout:g} s and its process group was killed{where}"
            ) from None
        except BaseException:
            _kill_group(process)
            raise
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
    return output


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


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
            data = handle.read()
            os.unlink(path)
            return data.decode("utf-8", "replace"), False
        head = handle.read(_HEAD)
        handle.seek(size - (MAX_STREAM_BYTES - _HEAD))
        tail = handle.read()
    skipped = size - len(head) - len(tail)
    marker = f"\n[... {skipped} bytes omitted; the full output ({size} bytes) is in {path} ...]\n"
    return head.decode("utf-8", "ignore") + marker + tail.decode("utf-8", "ignore"), True


BASH = Tool(
    name="bash",
    description=(
        "Run a shell command with bash in the workspace (stdin closed, no terminal). Returns exit_code, "
        "stdout and stderr; long outputs are cut to their head and tail and the full text is saved to a file "
        "you may read. A non-zero exit is reported, not an error; a timeout kills the command."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command line to run."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
                "description": f"Seconds before the command is killed. Default {DEFAULT_TIMEOUT}.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    prepare=_prepare_bash,
)
