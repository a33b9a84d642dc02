from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from turnmemory.analysis import open_meter
from turnmemory.llm import o200k_cache_file


def test_bytes_meter_counts_utf8_and_interns_blocks() -> None:
    meter = open_meter("bytes")
    assert (meter.unit, meter.note) == ("bytes", None)
    block = meter.block("héllo")
    assert block.size == 6
    assert meter.block("héllo") is block
    assert meter.tokens(400) == 100


def test_o200k_is_seeded_from_the_copy_bpe_openai_ships(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    meter = open_meter("o200k")
    assert (meter.unit, meter.note) == ("o200k", None)
    path = o200k_cache_file()
    assert path is not None and path.is_file()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )
    assert meter.block("hello world").size == 2
    assert meter.tokens(400) == 400


def test_o200k_falls_back_to_bytes_without_a_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    meter = open_meter("o200k")
    assert meter.unit == "bytes"
    assert meter.note == (
        "o200k tokenizer unavailable (o200k_base is neither in the tiktoken cache nor shipped by bpe-openai; "
        "set TIKTOKEN_CACHE_DIR); sizes are UTF-8 bytes"
    )


def test_a_damaged_cached_file_is_never_handed_to_tiktoken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    path = o200k_cache_file()
    assert path is not None and path.parent == tmp_path
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert path.name == hashlib.sha1(url.encode()).hexdigest()
    path.write_bytes(b"not the encoding")
    meter = open_meter("o200k")
    assert meter.unit == "bytes"
    assert "does not match its checksum" in (meter.note or "")
    assert path.read_bytes() == b"not the encoding"  # tiktoken would have deleted it and downloaded


def test_disabled_cache_means_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert o200k_cache_file() is None
    assert open_meter("o200k").unit == "bytes"
