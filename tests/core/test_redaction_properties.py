"""Properties of the redactor: a known token inserted anywhere, glued to anything and sprinkled with
invisible characters never survives; redaction is idempotent."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.secrets_corpus import visible

from turnmemory._text import bound_text
from turnmemory.redaction import redact

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"


def _token(prefix: str, alphabet: str, size: int) -> st.SearchStrategy[str]:
    body = st.text(alphabet, min_size=size, max_size=size).filter(
        lambda b: (
            any(c.isdigit() for c in b) and any(c.isupper() for c in b) and any(c.islower() for c in b)
            if alphabet != string.ascii_uppercase + string.digits
            else True
        )
    )
    return body.map(lambda b: prefix + b)


tokens = st.one_of(
    _token("ghp_", ALNUM, 36),
    _token("github_pat_", ALNUM, 40),
    _token("sk-ant-api03-", URLSAFE, 60),
    _token("sk-proj-", URLSAFE, 48),
    _token("AKIA", string.ascii_uppercase + string.digits, 16),
    _token("xoxb-", ALNUM, 30),
    _token("AIza", URLSAFE, 35),
    _token("glpat-", URLSAFE, 20),
    _token("hf_", ALNUM, 34),
    _token("npm_", ALNUM, 36),
    _token("sk_live_", ALNUM, 24),
    _token("hvs.", URLSAFE, 24),
)
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\ufe0f", "\x00", "\x1b"]
glue = st.text(alphabet=ALNUM + "_-=:/%.@\"'`$&?#+,;()[]{}<>|\\ \t\n", max_size=4)
surrounding = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=120)


@st.composite
def hidden(draw: st.DrawFn, token: str) -> str:
    """``token`` with zero or more invisible characters inserted at random places."""
    chars = list(token)
    for _ in range(draw(st.integers(0, 4))):
        chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(INVISIBLE)))
    return "".join(chars)


@st.composite
def planted(draw: st.DrawFn) -> tuple[str, str, str]:
    """(a text holding a token somewhere, the token, the text around it)."""
    token = draw(tokens)
    text = draw(surrounding)
    at = draw(st.integers(0, len(text)))
    before, after = draw(glue), draw(glue)
    planted_text = text[:at] + before + draw(hidden(token)) + after + text[at:]
    return planted_text, token, text[:at] + before + " " + after + text[at:]


def _survives(token: str, output: str, around: str) -> bool:
    """The token, or the end of its random body when the text around it does not hold that too."""
    body = token[-12:]
    seen = visible(output)
    return token in seen or (body in seen and body not in visible(around) and body not in around)


@settings(max_examples=400, deadline=None)
@given(planted())
def test_a_planted_token_never_survives(case: tuple[str, str, str]) -> None:
    text, token, around = case
    assert not _survives(token, redact(text), around)
    assert not _survives(token, bound_text(text, 100_000), around)
    assert not _survives(token, bound_text(text), around)


@settings(max_examples=300, deadline=None)
@given(planted())
def test_redaction_is_idempotent_on_planted_texts(case: tuple[str, str, str]) -> None:
    once = redact(case[0])
    assert redact(once) == once
    bounded = bound_text(case[0])
    assert bound_text(bounded) == bounded


words = st.sampled_from(
    [
        "password", "PASSWORD=", "--token", "-p", "pass:", "key:", "\"secret\": \"", "Authorization: Bearer ",
        "mysql", "curl -u a:", "login", "https://u:", "@host", "ghp_", "AKIA", "%3D", "=", ":", " ", "'", '"',
        "\\\n", "[REDACTED]", "sk-", "eyJ", ".", "/", "htpasswd -b f u ", "configure set x_secret ",
    ]
)  # fmt: skip
fragments = st.lists(st.one_of(words, st.text(ALNUM + "+/=_-", max_size=40), surrounding), max_size=12)


@settings(max_examples=500, deadline=None)
@given(fragments)
def test_redaction_is_idempotent(parts: list[str]) -> None:
    text = "".join(parts)
    once = redact(text)
    assert redact(once) == once
