"""Start-up of ``turnmemory run``: time from process start to the provider's first request, per provider,
beside what the interpreter, each provider's SDK and the offline tokenizer cost on their own.

    .venv/bin/python benchmarks/startup.py [--runs N] [--top N] [--against OTHER/src]

Each provider runs ``turnmemory run --provider P --base-url <fake server> --sandbox off "hi"`` as a
subprocess against the loopback :class:`~turnmemory.testing.FakeProviderServer` in this process, with an
isolated data and config directory and test keys. The first request's arrival is taken on this side: a
loop watches the server's recorded requests (0.5 ms apart) and notes ``time.perf_counter()`` and the
process's CPU time so far (``/proc/PID/stat``, 10 ms ticks) when one appears. CPU time is the steadier
figure on a busy machine. Baselines (``python -c pass``, ``python -c "import <sdk>"``, loading the o200k
tokenizer; timed to the end of their code, as a run is to its first request, and as whole processes) run
interleaved with the provider runs, so load on the machine falls on all rows alike; so do
the runs of ``--against``, another source tree (``git archive COMMIT src | tar -x -C DIR`` gives one) put
first on ``PYTHONPATH``, for a before/after comparison in one run. Medians of ``--runs``. Finally each provider
runs once under ``python -X importtime`` and the top-level imports costing most are listed, with the
provider SDKs that were imported at all.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from turnmemory.testing import MODELS, FakeProviderServer, Reply

PYTHON = sys.executable
SDK_IMPORTS = {
    "anthropic": "import anthropic",
    "openai_chat": "import openai",
    "openai_responses": "import openai",
    "gemini": "from google import genai",
    "bedrock": "import boto3",
}
"""The import of the SDK each provider's client needs."""
BASELINES = (
    "pass",
    *dict.fromkeys(SDK_IMPORTS.values()),
    "from turnmemory.llm import open_counter; open_counter('o200k').text('x')",
)
"""``python -c`` programs timed beside the runs: the interpreter, each SDK, the offline tokenizer."""
_SDK_ROOTS = ("anthropic", "openai", "google.genai", "boto3", "botocore")
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)$")
_TICK = os.sysconf("SC_CLK_TCK")
_TIMEOUT = 120


@dataclass
class Samples:
    """One row's wall and CPU times to the first request and of the whole process, in seconds."""

    first: list[float] = field(default_factory=list)
    first_cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def keep_last(self, count: int) -> None:
        """Drop all but the last ``count`` samples of each kind (the warm-up round goes)."""
        for values in (self.first, self.first_cpu, self.wall, self.cpu):
            del values[: max(len(values) - count, 0)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process so far (``/proc/PID/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _environment(root: Path, source: Path | None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TURNMEMORY_", "AWS_"))
        and not key.endswith("_API_KEY")
        and key != "PYTHONPATH"
    }
    env.update(
        TURNMEMORY_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
        GEMINI_API_KEY="test-key",
        AWS_ACCESS_KEY_ID="test-key-id",
        AWS_SECRET_ACCESS_KEY="test-secret",
        AWS_REGION="us-east-1",
    )
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _run_command(server: FakeProviderServer, provider: str, *options: str) -> list[str]:
    return [
        PYTHON,
        *options,
        "-m",
        "turnmemory.cli",
        "run",
        "--provider",
        provider,
        "--model",
        MODELS[provider],
        "--base-url",
        server.base_url(provider),
        "--sandbox",
        "off",
        "hi",
    ]


def _time_run(
    server: FakeProviderServer, provider: str, env: dict[str, str], cwd: Path, into: Samples
) -> None:
    """One ``turnmemory run``: wall and CPU time until the server holds its request, then the whole run's."""
    server.push(Reply(text="ok"))
    before = len(server.requests)
    cpu = _children_cpu()
    start = time.perf_counter()
    process = subprocess.Popen(
        _run_command(server, provider),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while len(server.requests) == before:
        if process.poll() is not None or time.perf_counter() - start > _TIMEOUT:
            process.kill()
            _, stderr = process.communicate()
            raise SystemExit(f"{provider}: no request reached the server:\n{stderr}")
        time.sleep(0.0005)
    first = time.perf_counter() - start
    first_cpu = _process_cpu(process.pid)
    _, stderr = process.communicate(timeout=_TIMEOUT)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{provider}: exit {process.returncode}:\n{stderr}")
    into.first.append(first)
    into.first_cpu.append(first_cpu)
    into.wall.append(wall)
    into.cpu.append(_children_cpu() - cpu)


def _time_baseline(code: str, env: dict[str, str], into: Samples) -> None:
    """One ``python -c code``: wall and CPU time to the end of ``code`` (the program reports them; Linux's
    ``perf_counter`` is one clock for every process) and of the whole process, shutdown included."""
    cpu = _children_cpu()
    start = time.perf_counter()
    report = f"{code}\nimport time\nprint(time.perf_counter(), time.process_time())"
    done = subprocess.run(
        [PYTHON, "-c", report], env=env, check=True, timeout=_TIMEOUT, capture_output=True, text=True
    )
    into.wall.append(time.perf_counter() - start)
    into.cpu.append(_children_cpu() - cpu)
    ended, used = (float(value) for value in done.stdout.split()[-2:])
    into.first.append(ended - start)
    into.first_cpu.append(used)


def _imports(server: FakeProviderServer, provider: str, env: dict[str, str], cwd: Path) -> dict[str, int]:
    """Every module ``turnmemory run`` imports for ``provider`` → cumulative µs, top-level ones keyed as
    ``"<name>"`` and nested ones as ``" <name>"`` (``-X importtime``)."""
    server.push(Reply(text="ok"))
    done = subprocess.run(
        _run_command(server, provider, "-X", "importtime"),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        check=True,
    )
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match:
            nested = len(match.group(3)) > 1
            found[(" " if nested else "") + match.group(4)] = int(match.group(2))
    return found


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table; numbers right-aligned (every column but the first and ``"SDKs imported"``)."""
    align = [" --- |" if i == 0 or name == "SDKs imported" else " ---: |" for i, name in enumerate(header)]
    lines = ["| " + " | ".join(header) + " |", "|" + "".join(align)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _sdks(modules: dict[str, int]) -> str:
    names = {name.strip() for name in modules}
    found = [root for root in _SDK_ROOTS if any(n == root or n.startswith(root + ".") for n in names)]
    return ", ".join(found) or "none"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--top", type=int, default=6, help="top-level imports listed per provider")
    parser.add_argument("--against", type=Path, help="another tree's src directory, measured alongside")
    args = parser.parse_args()
    providers = list(MODELS)
    trees: dict[str, Path | None] = {"this tree": None}
    if args.against is not None:
        if not (args.against / "turnmemory" / "cli.py").is_file():
            parser.error(f"--against: {args.against} holds no turnmemory/cli.py")
        trees[f"`{args.against}`"] = args.against.resolve()
    runs = {(tree, provider): Samples() for tree in trees for provider in providers}
    baselines = {code: Samples() for code in BASELINES}
    with tempfile.TemporaryDirectory() as scratch, FakeProviderServer() as server:
        root = Path(scratch)
        workspace = root / "workspace"
        workspace.mkdir()
        envs = {tree: _environment(root, source) for tree, source in trees.items()}
        env = envs["this tree"]
        jobs: list[Callable[[], None]] = [
            *(partial(_time_run, server, p, envs[tree], workspace, runs[tree, p]) for tree, p in runs),
            *(partial(_time_baseline, code, env, baselines[code]) for code in BASELINES),
        ]
        for _ in range(args.runs + 1):  # the first round warms the file cache and is not counted
            for job in jobs:
                job()
        imports = {key: _imports(server, key[1], envs[key[0]], workspace) for key in runs}
    for samples in (*runs.values(), *baselines.values()):
        samples.keep_last(args.runs)

    print(f"## `turnmemory run` to its first request (median of {args.runs}, ms)\n")
    rows = []
    for (tree, provider), sample in runs.items():
        sdk = baselines[SDK_IMPORTS[provider]]
        beyond = statistics.median(sample.first_cpu) - statistics.median(sdk.first_cpu)
        rows.append(
            [
                provider if len(trees) == 1 else f"{provider}, {tree}",
                _ms(sample.first),
                _ms(sample.first_cpu),
                _ms(sdk.first),
                _ms(sdk.first_cpu),
                f"{beyond * 1000:,.0f}",
                f"{statistics.median(sample.first_cpu) / statistics.median(sdk.first_cpu):.2f}",
                _ms(sample.wall),
                _ms(sample.cpu),
                _sdks(imports[tree, provider]),
            ]
        )
    header = [
        "provider",
        "first request",
        "its CPU",
        "SDK import",
        "its CPU",
        "CPU beyond the SDK",
        "CPU / SDK CPU",
        "whole run",
        "its CPU",
        "SDKs imported",
    ]
    print(_table(header, rows))
    print("\n## Baselines (median, ms): to the end of the code, and of the whole process\n")
    print(
        _table(
            ["python -c", "to its end", "its CPU", "whole process", "its CPU"],
            [
                [f"`{code}`", _ms(s.first), _ms(s.first_cpu), _ms(s.wall), _ms(s.cpu)]
                for code, s in baselines.items()
            ],
        )
    )
    print(
        f"\n## Top-level imports of `turnmemory run` in this tree by cumulative time"
        f" (`-X importtime`, ms, top {args.top})\n"
    )
    here = [imports["this tree", provider] for provider in providers]
    top: list[str] = []
    for modules in here:
        level = {name: us for name, us in modules.items() if not name.startswith(" ")}
        top += [
            name for name in sorted(level, key=level.__getitem__, reverse=True)[: args.top] if name not in top
        ]
    print(
        _table(
            ["module", *providers],
            [[name, *(f"{modules.get(name, 0) / 1000:,.0f}" for modules in here)] for name in top],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
