"""``analyze --jobs``: worker processes hold only a few files at a time, and a worker killed in the
middle loses nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from turnmemory.analysis import analyze_session, build_report, open_meter, report_json
from turnmemory.analysis._cost import CacheModel
from turnmemory.analysis._files import IN_FLIGHT_PER_JOB, PARALLEL_MIN_BYTES, read_files, workers_for
from turnmemory.transcripts import load_session

REPO = Path(__file__).resolve().parents[2]
SESSION = REPO / "examples" / "claude-code-session.jsonl"
TURNMEMORY = str(Path(sys.executable).with_name("turnmemory"))


def test_only_a_few_files_per_worker_are_in_flight() -> None:
    handed: list[int] = []

    def files() -> Iterator[tuple[Path, str]]:
        for number in range(30):
            handed.append(number)
            yield SESSION, "claude-code"

    results = read_files(files(), "bytes", CacheModel(), jobs=2)
    first = next(results)
    assert len(handed) <= 2 * IN_FLIGHT_PER_JOB + 1  # not all 30 read ahead
    rest = list(results)
    assert len(rest) == 29 and all(result.report == first.report for result in rest)
    assert first.report is not None and first.report.user_turns == 3


def test_the_default_reads_little_here_and_much_in_workers(tmp_path: Path) -> None:
    small = [(SESSION, "claude-code")] * 3
    assert workers_for(small, None) == 1 and workers_for(small, 2) == 2 and workers_for(small, 8) == 3
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(PARALLEL_MIN_BYTES)
    assert workers_for([(big, "claude-code"), *small], None) == min(4, max(1, len(os.sched_getaffinity(0))))


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_worker_killed_in_the_middle_loses_no_session(tmp_path: Path) -> None:
    copies = 24
    for number in range(copies):
        shutil.copy(SESSION, tmp_path / f"s{number:04}.jsonl")
    command = [
        TURNMEMORY,
        "analyze",
        str(tmp_path),
        "--format",
        "json",
        "--tokenizer",
        "bytes",
        "--jobs",
        "2",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and process.poll() is None and time.monotonic() < deadline:
        workers = [grandchild for child in _children(process.pid) for grandchild in _children(child)]
        if workers:
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    out, err = process.communicate(timeout=120)
    assert killed is not None, "the analysis finished before a worker could be killed"
    assert process.returncode == 0, err
    assert "Traceback" not in err
    sessions = json.loads(out)["sessions"]
    assert [Path(entry["path"]).name for entry in sessions] == [f"s{n:04}.jsonl" for n in range(copies)]
    meter = open_meter("bytes")
    alone = report_json(
        build_report([analyze_session(load_session(SESSION), meter, CacheModel.of())], meter, CacheModel.of())
    )["sessions"][0]
    assert all({**entry, "path": ""} == {**alone, "path": ""} for entry in sessions)
