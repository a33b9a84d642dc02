"""Image parts on every wire: detection by magic bytes, sizes from headers, the providers' token
formulas, the parts each SDK's own types accept, and ``check_request`` refusing forged ones."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.images import gif, jpeg, png, webp
from tests.providers.sdk_validators import validate

from turnmemory.memory import Message
from turnmemory.providers import PROVIDERS, wire
from turnmemory.providers._images import (
    Image,
    claude_tokens,
    gemini_tokens,
    image_problems,
    media_type,
    openai_tokens,
)
from turnmemory.providers.check import check_request

MAKERS = {
    "image/png": png,
    "image/gif": gif,
    "image/jpeg": jpeg,
    "image/webp": webp,
}
SIDES = st.integers(min_value=1, max_value=9000)


@given(kind=st.sampled_from(sorted(MAKERS)), width=SIDES, height=SIDES, name=st.text(max_size=20))
def test_the_type_and_size_come_from_the_bytes_never_the_name(
    kind: str, width: int, height: int, name: str
) -> None:
    maker = MAKERS[kind]
    data = maker(width, height) if kind != "image/png" else maker(1, 1)
    image = Image.of(name, data)
    assert image is not None and image.media_type == kind and image.name == name
    if kind != "image/png":  # a PNG of 9000 px a side is slow to make; its header is read as the others'
        assert (image.width, image.height) == (width, height)


@pytest.mark.parametrize("chunk", [b"VP8L", b"VP8X", b"VP8 "])
def test_every_webp_header_gives_its_size(chunk: bytes) -> None:
    image = Image.of("x.webp", webp(1234, 77, chunk))
    assert image is not None and (image.width, image.height) == (1234, 77)


@given(st.binary(max_size=64))
def test_bytes_without_an_image_signature_are_no_image(data: bytes) -> None:
    signatures = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")
    looks = data.startswith(signatures) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
    assert (media_type(data) is not None) == looks
    assert (Image.of("shot.png", data) is not None) == looks


def test_a_truncated_header_gives_a_type_without_a_size() -> None:
    for data in (png()[:20], gif()[:8], jpeg()[:10], webp()[:14]):
        image = Image.of("cut", data)
        assert image is not None and image.width is None and image.height is None


@pytest.mark.parametrize(
    ("formula", "width", "height", "tokens"),
    [
        (claude_tokens, 1092, 1092, 1590),  # the vision guide's table
        (claude_tokens, 200, 200, 54),
        (claude_tokens, 4000, 3000, 1600),  # scaled down to 1.2 megapixels first
        (openai_tokens, 1024, 1024, 765),  # the images guide's example: 4 tiles
        (openai_tokens, 2048, 4096, 1105),  # 768 x 1536: 6 tiles
        (openai_tokens, 100, 100, 255),
        (gemini_tokens, 384, 384, 258),
        (gemini_tokens, 1024, 1024, 1032),
    ],
)
def test_token_formulas(formula: Any, width: int, height: int, tokens: int) -> None:
    assert formula(Image("x", b"", "image/png", width, height)) == tokens


def _request(provider: str, images: list[Image]) -> dict[str, Any]:
    module = wire(provider)
    request = module.to_request([Message("system", "Be brief."), Message("user", "What is this?")])
    items = request[module.ITEMS]
    items[-1] = module.with_images(items[-1], images)
    return request


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_wire_sends_images_its_sdk_and_its_checker_accept(provider: str) -> None:
    module = wire(provider)
    images = [Image.of(f"shot.{kind}", MAKERS[kind]()) for kind in module.IMAGE_TYPES]
    request = _request(provider, [image for image in images if image is not None])
    validate(provider, request)
    assert check_request(provider, request, require_tools=False) == []
    text = str(request)
    assert all(image.base64 in text for image in images if image is not None)
    assert "shot." not in text  # the file's name is shown to the user, not sent


def _forge(request: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``request`` with every string ``old`` inside it replaced by ``new``."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value.replace(old, new) if isinstance(value, str) else value

    return walk(copy.deepcopy(request))  # type: ignore[no-any-return]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_checker_refuses_forged_image_parts(provider: str) -> None:
    image = Image.of("shot.png", png())
    assert image is not None
    request = _request(provider, [image])
    gif_data = base64.b64encode(gif()).decode()
    forged = {
        "not base64": _forge(request, image.base64, "not base64!"),
        "a GIF declared PNG": _forge(request, image.base64, gif_data),
        "text declared PNG": _forge(request, image.base64, base64.b64encode(b"hello").decode()),
    }
    for what, body in forged.items():
        problems = check_request(provider, body, require_tools=False)
        assert problems, what
        assert any("image" in problem or "base64" in problem for problem in problems), (what, problems)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_image_over_the_wire_limit_is_refused_by_the_checker(provider: str) -> None:
    module = wire(provider)
    data = png() + b"\0" * (module.MAX_IMAGE_BYTES + 1 - len(png()))
    request = _request(provider, [Image("big.png", data, "image/png")])
    problems = check_request(provider, request, require_tools=False)
    assert any(f"more than the {module.MAX_IMAGE_BYTES:,} allowed" in problem for problem in problems)


def test_image_problems_name_the_type_the_base64_and_the_size() -> None:
    data = base64.b64encode(png()).decode()
    types = ("image/png",)
    assert image_problems("x", "image/png", data, types, 10_000) == []
    assert "media type 'image/bmp'" in image_problems("x", "image/bmp", data, types, 10_000)[0]
    assert "non-empty base64" in image_problems("x", "image/png", "", types, 10_000)[0]
    assert "more than the 10 allowed" in image_problems("x", "image/png", data, types, 10)[0]


def test_gemini_takes_no_gif() -> None:
    assert "image/gif" not in wire("gemini").IMAGE_TYPES
    image = Image.of("anim.gif", gif())
    assert image is not None
    problems = check_request("gemini", _request("gemini", [image]), require_tools=False)
    assert any("media type 'image/gif'" in problem for problem in problems)


def test_only_gemini_reads_the_url_safe_alphabet() -> None:
    data = png() + bytes(range(256))
    urlsafe = base64.urlsafe_b64encode(data).decode().rstrip("=")
    assert "-" in urlsafe and "_" in urlsafe
    types = ("image/png",)
    assert image_problems("x", "image/png", urlsafe, types, 10_000, urlsafe=True) == []
    assert image_problems("x", "image/png", urlsafe, types, 10_000) == ["x: image data is not valid base64"]
