"""What one large tool-call argument costs the agent: wall time and peak memory of ``turnmemory run``.

    .venv/bin/python benchmarks/large_arguments.py [--sizes 0.25,1,2,8,8@0.25] [--against OTHER/src]
                                                   [PROVIDER ...]

Each row runs the real CLI (a fresh process) against the loopback fake server, which streams one
``write_file`` call whose ``content`` is SIZE MB of code-like lines, in 16-character fragments, then answers. The cap
(``max_argument_bytes``) is 10 MB, or CAP MB for a size written ``SIZE@CAP``: a size past its cap is
refused (``8@0.25``: 32 times the cap), and its memory should stay that of a call of the cap's size.
The parent reports the agent process's wall time and peak resident set (``ru_maxrss`` from
``wait4``: the agent alone, not the server), and how the call ended (written or refused).
``--against`` runs the same rows with another source tree first on ``PYTHONPATH`` (``git archive
COMMIT src | tar -x -C DIR`` gives one), for a before/after comparison in one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnmemory.providers import PROVIDERS
from turnmemory.testing import MODELS, FakeProviderServer, Reply, ToolCall

LINE = "    total = compute(total, step)  # one line of a generated file\n"
SECTIONS = {"bedrock": 'region = "us-east-1"\n', "gemini": 'api_key = "test-key"\n'}


def run(server: FakeProviderServer, provider: str, megabytes: float, cap: float, src: str | None) -> str:
    """One row: the agent's wall seconds, peak MiB and how the call ended, as table cells."""
    size = int(megabytes * 1_000_000)
    content = (LINE * (size // len(LINE) + 1))[:size]
    server.reset()
    server.push(Reply(tool_calls=[ToolCall("write_file", {"path": "big.txt", "content": content})]))
    server.push(Reply(text="Written."))
    del content
    with tempfile.TemporaryDirectory() as root:
        home = Path(root)
        workspace = home / "workspace"
        workspace.mkdir()
        config = home / "config" / "turnmemory" / "config.toml"
        config.parent.mkdir(parents=True)
        section = SECTIONS.get(provider)
        config.write_text(
            f'provider = "{provider}"\nmodel = "{MODELS[provider]}"\nbase_url = "{server.base_url(provider)}"\n'
            f"max_argument_bytes = {int(cap * 1_000_000)}\n"
            + (f"[providers.{provider}]\n{section}" if section else "")
        )
        env = {key: value for key, value in os.environ.items() if not key.startswith("TURNMEMORY_")}
        env.update(
            TURNMEMORY_DATA_DIR=str(home / "data"),
            XDG_CONFIG_HOME=str(home / "config"),
            ANTHROPIC_API_KEY="test-key",
            OPENAI_API_KEY="test-key",
            AWS_ACCESS_KEY_ID="test-key-id",
            AWS_SECRET_ACCESS_KEY="test-secret",
        )
        if src is not None:
            env["PYTHONPATH"] = src
        command = [sys.executable, "-m", "turnmemory.cli", "run", "--allow", "write", "Write big.txt."]
        with open(home / "out", "w") as out:
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=workspace, env=env, stdout=out, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        written = workspace / "big.txt"
        if written.exists():
            end = "written" if written.stat().st_size == size else "written short"
        else:
            results = " ".join(str(request.body) for request in server.requests[1:])
            end = "refused" if "not run: the arguments of write_file" in results else "failed"
        if code != 0:
            end += f" (exit {code})"
    return f"{seconds:8.1f} | {usage.ru_maxrss / 1024:9.0f} | {end}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.25,1,2,8,8@0.25", help="argument sizes in MB, each SIZE[@CAP]")
    parser.add_argument("--against", help="another source tree to measure first (its src directory)")
    parser.add_argument("providers", nargs="*", default=list(PROVIDERS))
    args = parser.parse_args()
    rows = [
        (float(size), float(cap or 10))
        for size, _, cap in (row.partition("@") for row in args.sizes.split(","))
    ]
    trees = [("before", str(Path(args.against).resolve())), ("after", None)] if args.against else [("", None)]
    print(f"16-character fragments; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the start")
    print("| provider | MB | cap MB | tree | seconds | peak MiB | call |")
    print("|---|---:|---:|---|---:|---:|---|")
    with FakeProviderServer(check=False) as server:
        for provider in args.providers:
            for megabytes, cap in rows:
                for tree, src in trees:
                    cells = run(server, provider, megabytes, cap, src)
                    print(f"| {provider} | {megabytes:g} | {cap:g} | {tree} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
