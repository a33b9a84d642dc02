"""The boundary policy through a framework adapter: one check every framework's tests run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Run = Callable[..., tuple[Sequence[Any], Any, Any]]
"""A framework test's ``_run(tmp_path, **options)``: the requests the model saw, first."""


def check_policies(run: Run, plain: Callable[[Any], Any], tmp_path: Path, raw: str) -> None:
    """Under the default policy every completed turn is compact; ``every_turn`` is the default;
    ``never`` and a ``when_it_pays`` cache that never expires (short turns: rewriting them costs
    more than reading them) send the raw trace, each request extending the last; a cache gone
    cold before each new prompt makes compacting pay, as the default does."""

    def seen(**options: Any) -> list[Any]:
        return [plain(request) for request in run(tmp_path, **options)[0]]

    default = seen()
    assert seen(boundary="every_turn") == default
    assert seen(boundary="when_it_pays", cache_ttl=0.0) == default
    never = seen(boundary="never")
    assert seen(boundary="when_it_pays", cache_ttl=None) == never
    assert all(raw in str(request) for request in never[2:])
    assert not any(raw in str(request) for request in default[3::2])  # each turn's first request
    for earlier, later in itertools.pairwise(never):
        assert later[: len(earlier)] == earlier
