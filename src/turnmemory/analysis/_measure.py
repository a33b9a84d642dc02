"""Sizes of request blocks: o200k tokens where the BPE file is available offline, else UTF-8 bytes.

tiktoken does not bundle its encoding files; it downloads them on first use and caches them under
``$TIKTOKEN_CACHE_DIR`` (or ``$DATA_GYM_CACHE_DIR``, or ``<tmp>/data-gym-cache``) by the SHA-1 of
their URL. :func:`open_meter` looks for ``o200k_base`` in that cache, verifies its SHA-256 itself and
only then asks tiktoken for the encoding, so nothing is ever fetched. When the cache lacks the file, it
is seeded from the copy the ``bpe-openai`` package ships (the same file, gzipped; the SHA-256 is checked
after decompression). With neither, sizes fall back to bytes with a one-line note.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

__all__ = ["BYTES_PER_TOKEN", "Block", "Meter", "Tokenizer", "Unit", "o200k_cache_file", "open_meter"]

Tokenizer = Literal["bytes", "o200k"]
"""What the caller asks for."""

Unit = Literal["o200k", "bytes"]
"""What sizes are measured in."""

BYTES_PER_TOKEN = 4
"""Bytes per token assumed where a strategy's threshold is in tokens but sizes are in bytes."""

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


class Block(NamedTuple):
    """One message of a request: its compact JSON text and its size in the meter's unit."""

    text: str
    size: int


class Meter:
    """Measures texts in one unit and interns the blocks it makes, so equal blocks are one object."""

    def __init__(self, unit: Unit, count: Callable[[str], int], note: str | None = None) -> None:
        self.unit: Unit = unit
        self.note = note
        self._count = count
        self._blocks: dict[str, Block] = {}

    def block(self, text: str) -> Block:
        """The block for ``text`` (the same object for the same text)."""
        found = self._blocks.get(text)
        if found is None:
            found = self._blocks[text] = Block(text, self._count(text))
        return found

    def tokens(self, size: int) -> float:
        """``size`` in tokens: itself for o200k, bytes divided by :data:`BYTES_PER_TOKEN` otherwise."""
        return float(size) if self.unit == "o200k" else size / BYTES_PER_TOKEN


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


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


def open_meter(tokenizer: Tokenizer = "o200k") -> Meter:
    """A meter in o200k tokens when asked for and available offline, else in UTF-8 bytes.

    The returned meter's ``note`` says why bytes were used when o200k was asked for.
    """
    if tokenizer == "bytes":
        return Meter("bytes", _utf8_size)
    reason = _o200k_unavailable()
    if reason is not None:
        return Meter(
            "bytes", _utf8_size, note=f"o200k tokenizer unavailable ({reason}); sizes are UTF-8 bytes"
        )
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return Meter("o200k", lambda text: len(encoding.encode_ordinary(text)))


def _o200k_unavailable() -> str | None:
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return "tiktoken is not installed"
    path = o200k_cache_file()
    if path is not None and not path.is_file():
        _seed_cache(path)
    if path is None or not path.is_file():
        return "o200k_base is neither in the tiktoken cache nor shipped by bpe-openai; set TIKTOKEN_CACHE_DIR"
    if hashlib.sha256(path.read_bytes()).hexdigest() != _O200K_SHA256:
        return f"the cached o200k_base at {path} does not match its checksum"
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
