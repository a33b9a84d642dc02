"""What a hostile MCP server costs the agent: memory and disk for its stderr, bytes of system prompt for its
catalogue.

    .venv/bin/python benchmarks/mcp_bounds.py [--against OTHER/src]

Each row starts a fresh process that opens an ``McpManager`` on one server from ``tests/agent/mcp_servers``
and builds the catalogue (which starts the server): ``raw_server.py stderr N`` writes N MiB of stderr and
exits (a failed start), ``hostile_server.py many N`` lists N tools, ``hostile_server.py names`` one tool
with a 1 MiB name. The process reports its own peak resident set (``ru_maxrss``, its servers not
included), the bytes its spill directory holds once the start has failed, and the catalogue's size.
``--against`` runs the same rows with another source tree first on ``PYTHONPATH`` (``git archive COMMIT
src | tar -x -C DIR`` gives one), for a before/after comparison in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SERVERS = Path(__file__).resolve().parent.parent / "tests" / "agent" / "mcp_servers"
ROWS = [
    ("stderr 0 MiB, failed start", "raw_server.py", ["stderr", "0"]),
    ("stderr 64 MiB, failed start", "raw_server.py", ["stderr", "64"]),
    ("stderr 192 MiB, failed start", "raw_server.py", ["stderr", "192"]),
    ("100 tools", "hostile_server.py", ["many", "100"]),
    ("10,000 tools", "hostile_server.py", ["many", "10000"]),
    ("a 1 MiB tool name", "hostile_server.py", ["names"]),
]
PROBE = """
import json, os, resource, sys
from turnmemory.agent.mcp import McpManager, McpServerConfig
spill, script, *args = sys.argv[1:]
config = McpServerConfig(name="s", command=sys.executable, args=(script, *args), startup_timeout=120)
with McpManager([config], spill_dir=spill) as manager:
    text = manager.catalogue_text()
    disk = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(spill) for name in names)
print(json.dumps({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "disk": disk,
                  "catalogue": len(text.encode())}))
"""


def measure(script: str, args: list[str], source: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as spill:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, spill, str(SERVERS / script), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=True,
        )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="another source tree to compare with (its src directory)")
    options = parser.parse_args()
    trees = [("this tree", None)] + (
        [(f"--against {options.against}", options.against)] if options.against else []
    )
    print(f"| server | tree | peak RSS MiB | spill dir bytes | catalogue bytes |\n|{'---|' * 5}")
    for label, script, args in ROWS:
        for tree, source in trees:
            row = measure(script, args, source)
            print(
                f"| {label} | {tree} | {row['peak']:.0f} | {row['disk']:,} | {row['catalogue']:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
