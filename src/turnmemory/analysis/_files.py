"""Reading session files into reports, in this process or in worker processes.

Each file is read and analysed on its own (:func:`read_file`), so files can go to a pool of worker
processes (:func:`read_files`): at most a few files per worker are in flight at once, whatever the
number of files, and the results come back in the order of the files, so the output does not depend
on the number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from turnmemory.analysis._cost import CacheModel
from turnmemory.analysis._measure import Meter, Tokenizer, Unit, open_meter
from turnmemory.analysis._report import SessionReport, analyze_session
from turnmemory.transcripts import load_session

__all__ = [
    "IN_FLIGHT_PER_JOB",
    "MOSTLY_UNREADABLE",
    "PARALLEL_MIN_BYTES",
    "FileResult",
    "default_jobs",
    "read_file",
    "read_files",
    "workers_for",
]

MOSTLY_UNREADABLE = 0.5
"""A line-based log with more than this share of unreadable lines is not analysed."""

IN_FLIGHT_PER_JOB = 2
"""Files handed to the pool per worker before the first result is taken back."""

PARALLEL_MIN_BYTES = 4 << 20
"""Below this many bytes of logs one process is done before worker processes have started."""


@dataclass(frozen=True, slots=True)
class FileResult:
    """What reading one file gave: its report (``None`` when it was left out), its unreadable lines
    (the first few, and how many), and one line to say about it (why it was left out, or how much of
    it was read)."""

    path: Path
    report: SessionReport | None
    problems: tuple[str, ...] = ()
    unreadable: int = 0
    note: str | None = None


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def workers_for(files: list[tuple[Path, str]], jobs: int | None) -> int:
    """How many worker processes to read ``files`` with, at most one per file: ``jobs``, or when it is
    ``None`` one per core, but none (``1``: this process) for less than :data:`PARALLEL_MIN_BYTES`."""
    if jobs is None:
        small = sum(_size(path) for path, _ in files) < PARALLEL_MIN_BYTES
        jobs = 1 if small else default_jobs()
    return max(1, min(jobs, len(files)))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_file(path: Path, fmt: str, meter: Meter, cache: CacheModel) -> FileResult:
    """Import and analyse the session at ``path``; a file that cannot be used is a result too."""
    try:
        session = load_session(path, fmt)
    except (OSError, ValueError) as error:
        said = f"skipped: {error}" if path.name in str(error) else f"skipped: {path}: {error}"
        return FileResult(path, None, note=said)
    note = None
    if session.lines and session.unreadable:
        read = f"{session.lines - session.unreadable:,} of {session.lines:,} lines readable"
        if session.unreadable / session.lines > MOSTLY_UNREADABLE:
            note = f"skipped: {path}: mostly unreadable ({read})"
            return FileResult(path, None, session.problems, session.unreadable, note)
        note = f"partly read: {path}: {read}"
    return FileResult(
        path, analyze_session(session, meter, cache), session.problems, session.unreadable, note
    )


def read_files(
    files: Iterable[tuple[Path, str]], unit: Unit, cache: CacheModel, jobs: int, meter: Meter | None = None
) -> Iterator[FileResult]:
    """:func:`read_file` of every ``(path, format)``, in order, by ``jobs`` worker processes.

    With one job the files are read here, with ``meter`` (else one in ``unit``). When a worker
    process dies (killed, out of memory), the files that were in flight are read again one at a
    time, each in a process of its own: only a file whose own process dies too is left out (and
    said); the rest go on in a new pool.
    """
    if jobs <= 1:
        here = meter or open_meter(_tokenizer(unit))
        yield from (read_file(path, fmt, here, cache) for path, fmt in files)
        return
    queue = iter(files)
    while batch := list(islice(queue, jobs * IN_FLIGHT_PER_JOB)):
        with _pool(jobs, unit) as pool:
            pending: deque[tuple[Path, str, Future[FileResult]]] = deque(
                (path, fmt, pool.submit(_read_in_worker, path, fmt, cache)) for path, fmt in batch
            )
            try:
                while pending:
                    result = pending[0][2].result()
                    pending.popleft()
                    for path, fmt in islice(queue, 1):
                        pending.append((path, fmt, pool.submit(_read_in_worker, path, fmt, cache)))
                    yield result
                return
            except BrokenProcessPool:
                pass
        for path, fmt, _ in pending:
            yield _alone(path, fmt, unit, cache)


def _alone(path: Path, fmt: str, unit: Unit, cache: CacheModel) -> FileResult:
    """:func:`read_file` in a process of its own."""
    with _pool(1, unit) as pool:
        try:
            return pool.submit(_read_in_worker, path, fmt, cache).result()
        except BrokenProcessPool:
            return FileResult(path, None, note=f"skipped: {path}: the process analysing it ended abruptly")


_worker_meter: Meter | None = None


def _start_worker(unit: Unit) -> None:
    global _worker_meter
    _worker_meter = open_meter(_tokenizer(unit))


def _read_in_worker(path: Path, fmt: str, cache: CacheModel) -> FileResult:
    assert _worker_meter is not None, "the worker's initializer opens its meter"
    return read_file(path, fmt, _worker_meter, cache)


def _tokenizer(unit: Unit) -> Tokenizer:
    return "o200k" if unit == "o200k" else "bytes"


def _pool(jobs: int, unit: Unit) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(unit,))
