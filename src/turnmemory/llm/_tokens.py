"""Token accounting for requests: an offline estimate, calibrated by usage, and model context windows.

The estimate counts the compact JSON of what a request carries. It uses tiktoken's ``o200k_base`` when
tiktoken is installed and the encoding file is available offline: tiktoken does not bundle its files;
it downloads them on first use and caches them under ``$TIKTOKEN_CACHE_DIR`` (or
``$DATA_GYM_CACHE_DIR``, or ``<tmp>/data-gym-cache``) by the SHA-1 of their URL. The cache is checked
(and seeded from the gzipped copy the ``bpe-openai`` package ships, SHA-256 verified) before tiktoken
is asked, so nothing is ever fetched. Otherwise the estimate is UTF-8 bytes / 3, a conservative
stand-in (real tokenizers give 3.5 to 4.5 bytes per token on code and JSON), labelled as such.

No provider's own tokenizer is available offline (providers.md §9), so the estimate is calibrated by
the input tokens each response reports: :class:`Accounting` keeps the ratio of the reported count to
the estimate of the request that produced it.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from turnmemory._text import compact_json

__all__ = [
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_RESERVE",
    "ESTIMATE_BYTES_PER_TOKEN",
    "Accounting",
    "ContextLimits",
    "TokenCounter",
    "Tokenizer",
    "context_window",
    "o200k_cache_file",
    "o200k_unavailable",
    "open_counter",
]

Tokenizer = Literal["auto", "o200k", "bytes"]
"""``o200k`` (tiktoken, offline), ``bytes`` (UTF-8 bytes / 3), or ``auto``: o200k where available."""

ESTIMATE_BYTES_PER_TOKEN = 3
"""Bytes per token of the byte-based fallback estimate (conservative: it over-counts)."""

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model the table does not know."""

DEFAULT_RESERVE = 8192
"""Tokens held back for the output when no ``max_tokens`` is set."""

CONTEXT_WINDOWS: Mapping[str, int] = {
    "claude": 200_000,
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-oss": 131_072,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "gemini-1.5": 1_048_576,
    "gemini-2": 1_048_576,
    "gemini-3": 1_048_576,
    "gemma-3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "llama-3": 8_192,
    "llama-4": 1_000_000,
    "qwen3-coder": 262_144,
    "qwen3": 32_768,
    "qwen2.5": 32_768,
    "qwq": 131_072,
    "mistral-large": 131_072,
    "mistral-small": 131_072,
    "devstral": 131_072,
    "codestral": 262_144,
    "mistral": 32_768,
    "mixtral": 32_768,
    "deepseek": 131_072,
    "nova": 300_000,
}
"""Context windows in tokens by model-name prefix (the longest matching prefix wins).

Names are matched in lower case after any path (``meta-llama/``, ``models/``) and Bedrock's
``[region.]vendor.`` prefix are removed. Where a family's sizes differ, the smaller one is listed.
"""

_VENDOR = re.compile(
    r"^(?:[a-z]{2,4}\.)?(?:anthropic|meta|amazon|mistral|cohere|ai21|deepseek|qwen|openai|google)\.",
)
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_VERIFIED: set[tuple[str, int, int]] = set()
"""Cache files whose checksum was verified, by path, size and modification time."""
_PLAUSIBLE = (0.5, 2.0)
"""Reported/estimated ratios outside this range describe some other request (a proxy, a fake)."""
_SAMPLE = 1024
"""Requests estimated below this many tokens do not calibrate (fixed overheads dominate them)."""


def context_window(model: str) -> int:
    """The context window of ``model`` from :data:`CONTEXT_WINDOWS`, or :data:`DEFAULT_CONTEXT_WINDOW`."""
    name = _VENDOR.sub("", model.strip().lower().rsplit("/", 1)[-1])
    matches = [prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True, slots=True)
class ContextLimits:
    """How much a request may carry: ``window`` minus ``reserve`` (output) minus a 5% safety margin.

    ``clear_at_least`` is the fewest tokens one reduction frees, so that the cached prompt prefix
    changes rarely.
    """

    window: int
    reserve: int
    clear_at_least: int

    def __post_init__(self) -> None:
        if self.window < 1024:
            raise ValueError(f"context_window: expected at least 1024 tokens, got {self.window}")
        if not 0 <= self.reserve <= self.window // 2:
            raise ValueError(
                f"context_reserve: expected 0 to half the window ({self.window // 2}), got {self.reserve}"
            )
        if self.clear_at_least < 0:
            raise ValueError(f"clear_at_least: expected a non-negative count, got {self.clear_at_least}")

    @classmethod
    def of(
        cls,
        model: str,
        *,
        window: int | None = None,
        reserve: int | None = None,
        max_tokens: int | None = None,
        clear_at_least: int | None = None,
    ) -> ContextLimits:
        """Limits for ``model``: its window from the table unless given; the reserve is ``reserve``,
        else ``max_tokens``, else :data:`DEFAULT_RESERVE` (at most a quarter of the window);
        ``clear_at_least`` defaults to a fifth of the window."""
        size = window if window is not None else context_window(model)
        held = reserve if reserve is not None else min(max_tokens or DEFAULT_RESERVE, size // 4)
        return cls(
            window=size,
            reserve=held,
            clear_at_least=clear_at_least if clear_at_least is not None else size // 5,
        )

    @property
    def budget(self) -> int:
        """The most tokens a request may carry."""
        return max(1, self.window - self.reserve - self.window // 20)


class TokenCounter:
    """Counts tokens of texts and JSON-ready values, in o200k tokens or the byte-based estimate.

    ``unit`` says which; ``note`` says why bytes were used when o200k was wanted. A counter made with
    ``load`` instead of ``count`` calls it at its first count to get ``count`` (loading o200k takes
    about as much CPU time as importing a provider's SDK, so it waits until something is counted).
    """

    def __init__(
        self,
        unit: Literal["o200k", "bytes"],
        count: Callable[[str], int] | None = None,
        note: str | None = None,
        *,
        load: Callable[[], Callable[[str], int]] | None = None,
    ) -> None:
        if (count is None) == (load is None):
            raise ValueError("TokenCounter: expected count or load")
        self.unit: Literal["o200k", "bytes"] = unit
        self.note = note
        self._count = count
        self._load = load

    @property
    def loaded(self) -> bool:
        """Whether counting is ready (``False`` until the first count of a counter made with ``load``)."""
        return self._count is not None

    def text(self, text: str) -> int:
        """Tokens of ``text``."""
        if not text:
            return 0
        if self._count is None:
            assert self._load is not None
            self._count = self._load()
        return self._count(text)

    def value(self, value: Any) -> int:
        """Tokens of the compact JSON of ``value``."""
        return self.text(compact_json(value))


def _bytes_estimate(text: str) -> int:
    return -(-len(text.encode("utf-8")) // ESTIMATE_BYTES_PER_TOKEN)


def open_counter(
    tokenizer: Tokenizer = "auto",
    *,
    fallback: Callable[[str], int] = _bytes_estimate,
    fallback_note: str = f"estimating bytes/{ESTIMATE_BYTES_PER_TOKEN}",
) -> TokenCounter:
    """A counter in o200k tokens when wanted and available offline (loaded at its first count), else in
    ``bytes``: ``fallback`` counts (by default the byte-based estimate), ``fallback_note`` says how in the
    counter's note when o200k was wanted."""
    if tokenizer not in ("auto", "o200k", "bytes"):
        raise ValueError(f"tokenizer: expected auto, o200k or bytes, got {tokenizer!r}")
    if tokenizer == "bytes":
        return TokenCounter("bytes", fallback)
    reason = o200k_unavailable()
    if reason is not None:
        return TokenCounter(
            "bytes", fallback, note=f"o200k tokenizer unavailable ({reason}); {fallback_note}"
        )
    return TokenCounter("o200k", load=_load_o200k)


def _load_o200k() -> Callable[[str], int]:
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return lambda text: len(encoding.encode_ordinary(text))


class Accounting:
    """Estimated request sizes, calibrated by the input tokens the provider reported.

    :meth:`observe` takes the raw estimate of a request and the input tokens its response reported;
    later estimates are scaled by that ratio. Small requests (under 1024 estimated tokens) are not
    samples, and a ratio outside 1/2..2 is ignored: the usage does not describe this request (an
    OpenAI-compatible proxy that reports nothing, a test double).
    """

    def __init__(self, counter: TokenCounter, limits: ContextLimits) -> None:
        self.counter = counter
        self.limits = limits
        self._ratio = 1.0
        self._unmeasured: tuple[Callable[[], int], int] | None = None

    @property
    def ratio(self) -> float:
        """Reported input tokens per estimated token: 1.0 until a response calibrates it."""
        if self._unmeasured is not None:
            measure, reported = self._unmeasured
            self._unmeasured = None
            self.observe(measure(), reported)
        return self._ratio

    def scaled(self, raw: int) -> int:
        """``raw`` estimated tokens, calibrated."""
        return math.ceil(raw * self.ratio)

    def raw(self, tokens: int) -> int:
        """The raw estimate that calibrates to ``tokens``."""
        return math.ceil(tokens / self.ratio)

    def observe(self, raw: int | Callable[[], int], reported: int) -> None:
        """A response reported ``reported`` input tokens for a request estimated at ``raw``.

        A callable ``raw`` measures the request when the ratio is next needed: measuring may load the
        tokenizer, which a process that sends no further request never needs.
        """
        if callable(raw):
            _ = self.ratio  # an earlier deferred observation comes first
            self._unmeasured = (raw, reported)
            return
        if raw < _SAMPLE or reported <= 0:
            return
        ratio = reported / raw
        if _PLAUSIBLE[0] <= ratio <= _PLAUSIBLE[1]:
            self._ratio = ratio


def o200k_cache_file() -> Path | None:
    """Where tiktoken would cache ``o200k_base``, or ``None`` when caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not directory:
        return None
    return Path(directory) / hashlib.sha1(_O200K_URL.encode()).hexdigest()


def o200k_unavailable() -> str | None:
    """Why tiktoken's ``o200k_base`` cannot be used offline (seeding the cache first), or ``None``."""
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return "tiktoken is not installed"
    path = o200k_cache_file()
    if path is not None and not path.is_file():
        _seed_cache(path)
    if path is None or not path.is_file():
        return "o200k_base is neither in the tiktoken cache nor shipped by bpe-openai; set TIKTOKEN_CACHE_DIR"
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _VERIFIED:
        if hashlib.sha256(path.read_bytes()).hexdigest() != _O200K_SHA256:
            return f"the cached o200k_base at {path} does not match its checksum"
        _VERIFIED.add(key)
    return None


def _shipped_o200k() -> bytes | None:
    """The ``o200k_base`` file the ``bpe-openai`` package ships, if installed and intact."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    shipped = Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k_base.tiktoken.gz"
    try:
        data = gzip.decompress(shipped.read_bytes())
    except (OSError, EOFError):
        return None
    return data if hashlib.sha256(data).hexdigest() == _O200K_SHA256 else None


def _seed_cache(path: Path) -> None:
    """Put the shipped ``o200k_base`` where tiktoken looks for its download (atomically)."""
    data = _shipped_o200k()
    if data is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(path)
    except OSError:
        return
