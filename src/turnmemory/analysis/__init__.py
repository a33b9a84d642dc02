"""Token and cost accounting of history strategies on real session logs.

Replays imported sessions (:mod:`turnmemory.transcripts`) request by request under eight history
strategies (``full``, ``prose_only``, ``turnmemory``, ``turnmemory_auto``, ``turnmemory_target``,
``mask10``, ``anthropic_clear``, ``opencode_prune``), measures what each request carries in one wire
shape, and prices the session under a prompt-cache model (a provider's prices, the cache lifetime
against the logs' own timestamps, the minimum cacheable size)::

    from turnmemory.analysis import CacheModel, analyze_session, build_report, open_meter, report_json
    from turnmemory.transcripts import discover, load_session

    meter = open_meter("o200k")            # falls back to UTF-8 bytes, with meter.note saying why
    cache = CacheModel.of("anthropic", "5m")
    sessions = [analyze_session(load_session(p), meter, cache) for p in discover(["~/.codex/sessions"])]
    print(report_json(build_report(sessions, meter, cache))["total"]["turnmemory_auto"])
"""

from turnmemory.analysis._cost import (
    CACHE_READ,
    CACHE_TTLS,
    CACHE_WRITE,
    PRICING,
    Bill,
    Cache,
    CacheModel,
    Pricing,
    request_cost,
    shared_prefix,
)
from turnmemory.analysis._measure import Block, Meter, Tokenizer, Unit, open_meter
from turnmemory.analysis._report import (
    Report,
    SessionReport,
    StrategyResult,
    analyze_session,
    build_report,
    render_markdown,
    render_table_rows,
    report_json,
    summary_line,
    tool_share_removed,
)
from turnmemory.analysis._strategies import STRATEGIES, Request, StrategyName, requests
from turnmemory.analysis._trace import Turn, conversation

__all__ = [
    "CACHE_READ",
    "CACHE_TTLS",
    "CACHE_WRITE",
    "PRICING",
    "STRATEGIES",
    "Bill",
    "Block",
    "Cache",
    "CacheModel",
    "Meter",
    "Pricing",
    "Report",
    "Request",
    "SessionReport",
    "StrategyName",
    "StrategyResult",
    "Tokenizer",
    "Turn",
    "Unit",
    "analyze_session",
    "build_report",
    "conversation",
    "open_meter",
    "render_markdown",
    "render_table_rows",
    "report_json",
    "request_cost",
    "requests",
    "shared_prefix",
    "summary_line",
    "tool_share_removed",
]
