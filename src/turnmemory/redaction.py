"""Secret redaction: one redactor for every string that is retained, persisted or replayed.

:func:`redact` replaces each secret inside a text with ``[REDACTED]`` and keeps everything around it,
so a retained command stays useful (``PGPASSWORD=[REDACTED] psql -h db``). It knows four kinds of
secret:

- **vendor shapes** with a distinctive prefix (``ghp_``, ``sk-ant-``, ``AKIA``, ``xoxb-``, Slack and
  Discord webhook paths, Telegram bot tokens, PEM private keys, JWTs...), found anywhere, even glued to
  a word (``key_AKIA...``, ``token%3Dghp_...``, a tool named ``get_sk-ant-...``);
- **credential positions**: the value after a credential-naming key in an assignment (``DB_PASS=``,
  ``"pass": "..."``, ``password: ...``, a line continuation), a flag (``--password X``,
  ``-passout pass:X``), a header (``Authorization: Bearer ...``), URL user-info, a query parameter, or
  a command's own credential argument (``curl -u user:pass``, ``mysql -pPASS``, ``sshpass -p``,
  ``docker login -p``, ``htpasswd -b``, ``aws configure set``, ``gh secret set --body``, ``.netrc``
  ``password X``). Strong names (password, secret, api key...) always lose their value, unless it is
  an ordinary word of prose (``api_key: Incorrect API key provided``); weak ones (key, token,
  auth...) only a value that passes the entropy test;
- **random-looking blobs**: a long base64 run with high entropy (a PEM body line, an AWS secret key);
- **encoded secrets**: a run of hex digits that decodes to text holding a secret.

Matching runs on a normalized view of the text, built once per string: NFKC, format and control
characters removed, Cyrillic and Greek letters that look like Latin ones read as those, ``%XX``,
``\\xXX``, ``\\uXXXX`` and backslash escapes decoded, line continuations (a backslash before a line
break) joined. So zero-width spaces, soft hyphens, fullwidth letters and homoglyphs inside a token do
not hide it; the corresponding span of the original text is replaced. Redaction is idempotent.

Every rule is linear in its input by construction: each pattern starts at a literal or at the left
edge of a run, its quantifiers are possessive (they never give back what they took) and a value is
read at most :data:`VALUE_HEAD` characters ahead before it is judged, so no input makes a rule scan
the same text again and again. Rules whose literals do not occur in the text are skipped.

Add your own shapes with :func:`register`; they apply everywhere the built-in rules do::

    from turnmemory import redaction
    redaction.register(r"acme_[0-9a-f]{32}")                          # the whole match is a secret
    redaction.register(r"X-Acme-Session:\\s*(?P<secret>\\S+)", hints=["x-acme-session"])

A registered pattern is as fast as it is written: a literal such as ``re.escape(value)`` is linear.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import groupby

__all__ = ["REDACTED", "VALUE_HEAD", "SecretRule", "entropy", "generation", "redact", "register", "rules"]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

VALUE_HEAD = 64
"""How far a value in a credential position is read before it is judged (an accepted value is then
redacted to its end)."""

Check = Callable[[re.Match[str], str], bool]


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One secret shape.

    Every match of ``pattern`` is redacted: its ``secret`` group when the pattern has one (quotes
    around the value are kept), else the whole match. ``hints`` are lower-case literals of which one
    must occur in the text for the rule to run (empty: the rule always runs). ``anchors``: characters
    of which one must occur (another cheap skip). ``check`` (built-in rules) accepts or rejects a match
    given the text. ``context`` (built-in rules): a word that must occur earlier in the same simple
    command (``curl`` before ``-u user:pass``). ``rescan`` (built-in rules): after a rejected match,
    look for further matches inside its ``secret`` group (``--from-literal=password=X``).
    """

    pattern: re.Pattern[str]
    hints: tuple[str, ...] = ()
    check: Check | None = None
    anchors: str = ""
    context: re.Pattern[str] | None = None
    rescan: bool = False


# -- value tests ----------------------------------------------------------------------------------


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    size = len(value)
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / size * math.log2(n / size) for n in counts.values())


_REFERENCE = re.compile(r"\$(?:\{|\(|[A-Z_][A-Z0-9_]*+$)|\{\{|%[A-Z_][A-Z0-9_]*+%$")
_ALNUM = re.compile(r"[^\W_]")
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[^\W\d_]")


_TEMPLATE = re.compile(r"(?i)(?:your|my)[_-]\w*+$|<[^>]*+>$|x{3,}+$")


def _is_placeholder(value: str) -> bool:
    """Not a secret: a reference (``$VAR``, ``${VAR}``, ``$(cmd)``, ``{{ x }}``), a template
    (``YOUR_KEY``, ``<token>``, ``xxxx``), punctuation only, empty."""
    return (
        value == REDACTED
        or _ALNUM.search(value) is None
        or bool(_REFERENCE.match(value))
        or bool(_TEMPLATE.match(value))
    )


def _random_like(value: str, min_length: int = 8) -> bool:
    """The entropy test for a value in a weak credential position: long, mixed, not a word or path."""
    if len(value) < min_length or _is_placeholder(value) or (value.isalpha() and value[1:].islower()):
        return False
    if "/" in value or "\\" in value:  # a path, unless it is long and random (base64 has slashes)
        return len(value) >= 30 and entropy(value) >= 4.5 and value.count("/") * 12 <= len(value)
    digits = _DIGIT.search(value) is not None
    letters = _LETTER.search(value) is not None
    if digits and letters:
        return entropy(value) >= 2.5
    return (
        letters
        and value[1:] != value[1:].lower()  # an upper-case letter after the first
        and value != value.upper()  # and a lower-case one
        and (len(value) >= 16 and entropy(value) >= 3.5)
    )


def _blob(value: str) -> bool:
    """A random base64-looking run: mixed case and digits, few separators, high entropy."""
    separators = sum(value.count(c) for c in "/+_-")
    if separators * 10 > len(value) + 10:
        return False
    if "/" in value and any(
        len(part) >= 3 and part.isalpha() and part.islower() for part in value.split("/")
    ):
        return False  # a path: base64 almost never has a lower-case word between slashes
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if len(_DIGIT.findall(value)) < 2:
        return False
    return entropy(value.rstrip("=")) >= 4.5


# -- credential names -----------------------------------------------------------------------------

_STRONG_PARTS = (
    "password", "passwd", "passphrase", "secret", "credential", "apikey", "api_key", "accesskey",
    "access_key", "privatekey", "private_key", "auth_token", "authtoken", "access_token",
    "refresh_token", "id_token", "session_token", "license_key", "client_secret", "authorization",
)  # fmt: skip
_PASS_WORDS = {"pass", "pwd", "pw", "pswd", "passwd", "pword"}
_NOT_PASS = {"bypass", "compass", "surpass", "trespass", "overpass", "underpass", "encompass", "subpass"}
_WEAK_LAST = {
    "key", "token", "auth", "pat", "license", "licence", "dsn", "sig", "signature", "credentials",
    "cookie", "jwt", "bearer", "authkey", "secretkey", "masterkey",
    "signingkey", "encryptionkey", "sessionkey", "clientkey",
}  # fmt: skip
_NOT_SECRET_LAST = {
    "stdin", "prompt", "cmd", "command", "helper", "manager", "reset", "required", "storage", "file",
    "files", "path", "paths", "dir", "name", "names", "id", "ids", "length", "len", "size", "type",
    "types", "count", "enabled", "disabled", "env", "var", "field", "fields", "url", "uri",
    "endpoint", "header", "prefix", "suffix", "format", "mode", "policy", "hint", "label", "min", "max",
    "timeout", "ttl", "expiry", "expires", "version", "algorithm", "alg", "kind", "store", "column",
}  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]++")
_NAME_CHARS = 64  # a credential name is judged by its end (``..._PASSWORD``), never by more


@lru_cache(maxsize=4096)
def _strength(name: str) -> int:
    """2: the name always holds a secret; 1: it may (the value must pass the entropy test); 0: no."""
    words = [w for w in _SEPARATORS.split(_CAMEL.sub("_", name[-_NAME_CHARS:]).lower()) if w]
    if not words:
        return 0
    last = words[-1]
    if last in _NOT_SECRET_LAST:
        return 0
    joined = "_".join(words)
    if any(part in joined or part in "".join(words) for part in _STRONG_PARTS):
        return 2
    if last in _PASS_WORDS or (last.endswith(("pass", "pwd", "password")) and last not in _NOT_PASS):
        return 2
    return 1 if last in _WEAK_LAST or last.endswith(("token", "secret")) else 0


# -- the rules ------------------------------------------------------------------------------------

# A value in a credential position: quoted, an earlier marker, or bare (the view has already
# unescaped ``\"``), read at most VALUE_HEAD characters ahead; a line continuation may come first.
# Every quantifier is possessive: a value is read once and never given back.
_BARE_CHAR = r"[^\s'\"\\,;&|)}<>`]"
_VALUE = (
    r"(?:\\\s++)*+(?P<secret>\[REDACTED\](?=[\s'\",;&|)}\]]|$)|\"[^\"]*+\"|'[^']*+'"
    rf"|(?P<bare>{_BARE_CHAR}{{1,{VALUE_HEAD}}}+))"
)
_BARE_REST = re.compile(rf"(?:{_BARE_CHAR}++|\\[^\s\"'])*+")  # the rest of a bare value (``\x`` pairs too)


def _value_of(match: re.Match[str]) -> str:
    return _unquoted(match.group("secret"))


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


_INDIRECT = re.compile(r"(?i)(?:env|file|fd):|stdin$")  # where a tool reads the secret from
_SCHEMES = {"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "sso-key"}
_PROSE_AFTER = re.compile(r"[^\S\n]{1,2}+[A-Za-z]")


def _prose(match: re.Match[str], text: str) -> bool:
    """A value that is a word of a sentence: an unquoted word of letters after ``:``, with more words
    after it on its line (``api_key: Incorrect API key provided``)."""
    value = match.group("secret")
    separator = text[match.start() : match.start("secret")]
    return (
        value.isalpha()
        and ":" in separator
        and "=" not in separator
        and _PROSE_AFTER.match(text, match.end("secret")) is not None
    )


def _named(match: re.Match[str], text: str) -> bool:
    """An assignment or flag whose name holds a secret (weak names: the value must look random)."""
    name = match.group("name")
    strength = _strength(name)
    if strength == 0:
        return False
    if name.lower() in _PASS_WORDS and ":" in match.group(0)[len(name) :] and not _quoted_name(match, text):
        return False  # prose (``tests should pass: ...``); a ``pass:`` key is quoted JSON, or ``pass=``
    value = _value_of(match)
    if value.lower() in _SCHEMES:
        return False  # ``Authorization: Bearer $TOKEN``: the header rule reads past the scheme
    if value.lower().startswith("pass:"):
        value = value[5:]
    elif _INDIRECT.match(value):
        return False
    if strength == 2:
        return not _is_placeholder(value) and not _prose(match, text)
    in_query = match.start() > 0 and text[match.start() - 1] in "?&;"
    return not _is_placeholder(value) if in_query else _random_like(value)


def _quoted_name(match: re.Match[str], text: str) -> bool:
    return match.start() > 0 and text[match.start() - 1] in "\"'"


def _always(match: re.Match[str], text: str) -> bool:
    return not _is_placeholder(_value_of(match))


def _header_value(match: re.Match[str], text: str) -> bool:
    """A header's value: not a placeholder, a scheme word alone or a word of prose."""
    return _always(match, text) and _value_of(match).lower() not in _SCHEMES and not _prose(match, text)


def _not_a_word(match: re.Match[str], text: str) -> bool:
    value = _value_of(match)
    return not _is_placeholder(value) and not value.isalpha()


def _random_value(match: re.Match[str], text: str) -> bool:
    return _random_like(_value_of(match))


def _blob_value(match: re.Match[str], text: str) -> bool:
    return _blob(match.group("secret"))


def _sk_value(match: re.Match[str], text: str) -> bool:
    value = match.group("secret")[3:]
    digits = len(_DIGIT.findall(value))
    return digits >= 4 and digits < len(value) and entropy(value) >= 3.5


def _token_body(match: re.Match[str], text: str) -> bool:
    """Not a word: mixed case, or digits."""
    value = match.group("secret")[3:]
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed or _DIGIT.search(value) is not None


def _htpasswd_batch(match: re.Match[str], text: str) -> bool:
    return "b" in match.group("flags") and not _is_placeholder(_value_of(match))


def _hex_text(match: re.Match[str], text: str) -> bool:
    """A hex run that decodes to printable text holding a secret (``echo 6768705f... | xxd -r -p``)."""
    decoded = bytes.fromhex(match.group())
    if not decoded.isascii():
        return False
    plain = decoded.decode("ascii")
    return plain.isprintable() and bool(_spans(plain))


def _rule(
    pattern: str,
    hints: Iterable[str] = (),
    check: Check | None = None,
    *,
    context: str | None = None,
    rescan: bool = False,
) -> SecretRule:
    return SecretRule(
        re.compile(pattern), tuple(hints), check, "", re.compile(context) if context else None, rescan
    )


_I = "(?i)"
_KEYWORD_HINTS = (
    "pass", "pwd", "pw=", "pw:", "pswd", "secret", "token", "key", "auth", "cred", "licen", "dsn", "cookie",
    "jwt", "sig", "_pat", "-pat", "pat=", "pat:",
)  # fmt: skip
_NAME_VALUE_HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "licen")

# Vendor token shapes, from the public rule lists of gitleaks, trufflehog and detect-secrets:
# (shape, its literals). No word boundary on the left, so a glued prefix (``key_AKIA...``,
# ``get_sk-ant-...``) does not hide them; each starts with a literal and ends in a possessive run, so
# a failed attempt costs at most its own length.
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "AROA", "ANPA", "ANVA", "APKA")
_VENDOR_SHAPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"sk-ant-[A-Za-z0-9_-]{10,}+", ("sk-ant-",)),  # Anthropic
    (r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{16,}+", ("sk-",)),  # OpenAI project and service keys
    (r"[spr]k_(?:live|test)_[A-Za-z0-9]{10,}+", ("k_live_", "k_test_")),  # Stripe
    (r"whsec_[A-Za-z0-9]{20,}+", ("whsec_",)),  # Stripe webhook secrets
    (r"gh[pousr]_[A-Za-z0-9]{30,}+", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),  # GitHub
    (r"github_pat_[A-Za-z0-9_]{20,}+", ("github_pat_",)),  # GitHub fine-grained
    (
        r"gl(?:pat|dt|ptt|rt|soat|cbt|ffct|oas|agent|imt)-[A-Za-z0-9_-]{20,}+",
        (
            "glpat-",
            "gldt-",
            "glptt-",
            "glrt-",
            "glsoat-",
            "glcbt-",
            "glffct-",
            "gloas-",
            "glagent-",
            "glimt-",
        ),
    ),  # GitLab
    (r"GR1348941[A-Za-z0-9_-]{20,}+", ("gr1348941",)),  # GitLab runner registration
    (f"(?:{'|'.join(_AWS_PREFIXES)})[A-Z0-9]{{16}}", tuple(p.lower() for p in _AWS_PREFIXES)),  # AWS key ids
    (r"xox[abposre]-[A-Za-z0-9-]{10,}+", ("xox",)),  # Slack tokens
    (r"xapp-[0-9]-[A-Za-z0-9-]{10,}+", ("xapp-",)),  # Slack app tokens
    (r"AIza[0-9A-Za-z_-]{30,}+", ("aiza",)),  # Google API keys
    (r"GOCSPX-[A-Za-z0-9_-]{20,}+", ("gocspx-",)),  # Google OAuth client secrets
    (r"ya29\.[0-9A-Za-z_-]{20,}+", ("ya29.",)),  # Google OAuth access tokens
    (r"npm_[A-Za-z0-9]{30,}+", ("npm_",)),  # npm
    (r"pypi-AgE[A-Za-z0-9_-]{30,}+", ("pypi-age",)),  # PyPI
    (r"SG\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+", ("sg.",)),  # SendGrid
    (r"NR(?:AK|II|JS|RA|AA|SP)-[A-Z0-9]{20,}+", ("nrak-", "nrii-", "nrjs-", "nrra-", "nraa-", "nrsp-")),
    (r"do[por]_v1_[a-f0-9]{40,}+", ("dop_v1_", "doo_v1_", "dor_v1_")),  # DigitalOcean
    (r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),  # Shopify
    (r"ATATT3[A-Za-z0-9_=-]{30,}+", ("atatt3",)),  # Atlassian
    (r"dapi[a-f0-9]{32}", ("dapi",)),  # Databricks
    (r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}+", ("dp.",)),  # Doppler
    (r"hv[sb]\.[A-Za-z0-9_-]{24,}+", ("hvs.", "hvb.")),  # HashiCorp Vault
    (r"lin_(?:api|oauth)_[A-Za-z0-9]{30,}+", ("lin_api_", "lin_oauth_")),  # Linear
    (r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("pmak-",)),  # Postman
    (r"gl(?:c|sa)_[A-Za-z0-9+/_=]{32,}+", ("glc_", "glsa_")),  # Grafana
    (r"sntr[ysu]s?_[A-Za-z0-9+/=_]{30,}+", ("sntr",)),  # Sentry
    (r"HRKU-[A-Za-z0-9_-]{30,}+", ("hrku-",)),  # Heroku
    (r"sbp_[a-f0-9]{40}", ("sbp_",)),  # Supabase
    (r"AGE-SECRET-KEY-1[A-Z0-9]{50,}+", ("age-secret-key-1",)),  # age
    (r"ops_eyJ[A-Za-z0-9+/=]{30,}+", ("ops_eyj",)),  # 1Password service accounts
    (r"[MN][A-Za-z0-9]{23,25}+\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}+", (".",)),  # Discord bot tokens
    (r"[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{40,}+", ("atlasv1",)),  # Terraform Cloud
)

_BUILTIN: tuple[SecretRule, ...] = (
    # PEM private keys, the whole block (or to the end when its END line is missing).
    _rule(
        r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY[A-Z ]{0,16}+-----"
        r"(?:[^-]++|-(?!----END [A-Z0-9 ]{0,40}?PRIVATE KEY))*+"
        r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY[A-Z ]{0,16}+(?:-----)?+|\Z)",
        ["private key"],
    ),
    # Authorization headers, with or without a scheme word; a bare bearer token.
    _rule(
        _I + r"\b(?:proxy-)?authorization\s*+[:=]\s*+(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey"
        r"|sso-key)\s++)?(?P<secret>\[REDACTED\]|[^\s'\",;)}\]]++)",
        ["authorization"],
        _header_value,
    ),
    _rule(_I + r"\bbearer\s++(?P<secret>[A-Za-z0-9._~+/=-]{8,}+)", ["bearer"], _always),
    _rule(_I + r"\b(?:set-)?cookie\s*+:\s*+(?P<secret>[^'\"\n]++)", ["cookie"], _always),
    # Assignments and key/value pairs: NAME=value, NAME: value, "name": "value", NAME := value.
    _rule(
        r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]++)[\"']?+\s*+(?::=|=>|=|:)\s*+" + _VALUE,
        _KEYWORD_HINTS,
        _named,
        rescan=True,
    ),
    # Flags: --password X, --db-password=X, -storepass X, -passout pass:X.
    _rule(
        r"(?<![\w.-])--?+(?P<name>[A-Za-z0-9_.-]++)(?:=|\s++(?!-))" + _VALUE,
        _KEYWORD_HINTS,
        _named,
        rescan=True,
    ),
    # A key echoed in prose: ``Incorrect API key provided: sk-...``.
    _rule(
        _I + r"\b(?:api[ _-]?key|access[ _-]?key|token|secret|password)\s++"
        r"(?:provided|supplied|given|used|passed|sent|received)\s*+:\s*+"
        r"(?P<secret>[^\s'\",;.]++(?:\.[^\s'\",;.]++)*+)",
        ["provided", "supplied", "given", "used", "passed", "sent", "received"],
        _not_a_word,
    ),
    # URL user-info (also after a path normalizer made ``://`` into ``:/``).
    _rule(_I + r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+:/{1,3}+(?P<secret>[^\s/@:'\"]*+:[^\s/@'\"]*+)@", ["@"]),
    _rule(
        _I + r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+:/{1,3}+(?P<secret>[^\s/@:'\"]{16,}+)@", ["@"], _random_value
    ),
    # Credentials as command arguments: the flag, after the command's name in the same simple command.
    _rule(
        r"(?<!\S)(?:-u|-U|--user|--proxy-user|--http-user)(?:=|\s*+)['\"]?+[^\s:'\"]*+:(?P<secret>[^\s'\"]++)",
        ["curl", "wget", "xh", "http", "ftp"],
        _always,
        context=_I + r"\b(?:curl|wget|xh|https?|lftp|ftp)\b",
    ),
    _rule(
        r"(?<!\S)-p(?P<secret>'[^']*+'|\"[^\"]*+\"|[^\s'\"-][^\s'\"]*+)",
        ["mysql", "mariadb"],
        _always,
        context=_I + r"\b(?:mysql|mariadb)\w*+",
    ),
    _rule(r"(?<!\S)-p\s*+" + _VALUE, ["sshpass"], _always, context=_I + r"\bsshpass\b"),
    _rule(r"(?<!\S)(?:-p|--password)(?:=|\s++)" + _VALUE, ["login"], _always, context=_I + r"\blogin\b"),
    _rule(
        r"(?<!\S)(?:--body|-b)(?:=|\s*+)" + _VALUE, ["secret"], _always, context=_I + r"\bsecrets?\s++set\b"
    ),
    _rule(
        _I + r"\bhtpasswd(?P<flags>(?:\s++-[A-Za-z]++){0,8}+)\s++\S++\s++\S++\s++" + _VALUE,
        ["htpasswd"],
        _htpasswd_batch,
    ),
    _rule(
        _I + r"\b(?:configure\s++set|config(?::|\s++)set|config:add|secrets?\s++set|set-secret|set-env)"
        r"(?:\s++--?+\S++){0,8}+\s++(?P<name>[A-Za-z0-9_.-]++)(?:\s++|=)" + _VALUE,
        ["config", "secret", "set-env"],
        _named,
    ),
    _rule(_I + r"(?<![\w-])-pass(?:in|out|word)?+\s++pass:" + _VALUE, ["pass:"], _always),
    # .netrc and prose-like forms: ``login bob password X``; ``password X`` (any value in a file that
    # mentions netrc, else a random-looking one).
    _rule(_I + r"\b(?:login|machine|account)\s++\S++\s++(?:password|passwd)\s++" + _VALUE, ["pass"], _always),
    _rule(_I + r"(?<![\w-])(?:password|passwd|passphrase)\s++" + _VALUE, ["netrc"], _always),
    _rule(_I + r"(?<![\w-])(?:password|passwd|passphrase)\s++" + _VALUE, ["pass"], _random_value),
    # NAME value where NAME is an upper-case credential variable and the value looks random.
    _rule(
        r"(?<![A-Za-z0-9_])(?P<name>[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++)\s++" + _VALUE,
        _NAME_VALUE_HINTS,
        lambda match, text: _strength(match.group("name")) > 0 and _random_like(_value_of(match)),
        rescan=True,
    ),
    # Secret-bearing URL paths.
    _rule(
        _I + r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{8,}+)",
        ["hooks.slack"],
    ),
    _rule(_I + r"discord(?:app)?+\.com/api/webhooks/(?P<secret>[0-9]++/[A-Za-z0-9_-]++)", ["discord"]),
    _rule(_I + r"webhook\.office\.com/webhookb2/(?P<secret>[^\s'\"?#]++)", ["webhook.office"]),
    _rule(_I + r"hooks\.zapier\.com/hooks/catch/(?P<secret>[^\s'\"?#]++)", ["zapier"]),
    _rule(r"(?<![0-9])(?P<secret>[0-9]{5,16}+:A[A-Za-z0-9_-]{33,}+)", [":a"]),  # Telegram bot tokens
    # Vendor token shapes, and those that need a test of the value.
    *(_rule(shape, hints) for shape, hints in _VENDOR_SHAPES),
    # A JWT (signed or not), from the first ``eyJ`` of its run: the atomic group never tries a later one.
    _rule(
        r"(?<![A-Za-z0-9_-])(?>[A-Za-z0-9_-]*?(?=eyJ))"
        r"(?P<secret>eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+(?:\.[A-Za-z0-9_-]*+)?+)",
        ["eyj"],
    ),
    _rule(r"(?P<secret>sk-[A-Za-z0-9]{32,}+)", ["sk-"], _sk_value),  # OpenAI legacy, DeepSeek and alike
    _rule(r"(?P<secret>hf_[A-Za-z0-9]{30,}+)", ["hf_"], _token_body),  # Hugging Face
    _rule(r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![0-9a-fA-F])", ["sk"]),  # Twilio API keys
    _rule(r"(?<![A-Za-z0-9])key-[0-9a-f]{32}", ["key-"]),  # Mailgun
    # A random-looking base64 run: a PEM body line, an AWS secret key, an unknown vendor's token.
    _rule(
        r"(?<![A-Za-z0-9+/_-])(?P<secret>[A-Za-z0-9+/_-]{32,}+={0,2}+)(?![A-Za-z0-9+/=_-])", (), _blob_value
    ),
    # Hex-encoded text holding a secret.
    _rule(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){16,}+(?![0-9A-Fa-f])", (), _hex_text),
)

_active: tuple[SecretRule, ...] = _BUILTIN


_hints: tuple[str, ...] = tuple(sorted({hint for rule in _BUILTIN for hint in rule.hints}))
_generation = 0


def register(pattern: str | re.Pattern[str] | SecretRule, *, hints: Iterable[str] = ()) -> SecretRule:
    """Add a secret shape to the redactor everywhere (retention, loading, the session store).

    ``pattern``: a regular expression; its ``secret`` group (or the whole match) is redacted.
    ``hints``: lower-case literals of which every match contains one, to skip the rule cheaply on
    texts without them (none: the rule runs on every text). Returns the rule.
    """
    global _active, _hints, _generation
    if isinstance(pattern, SecretRule):
        rule = pattern
    else:
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        rule = SecretRule(compiled, tuple(hint.lower() for hint in hints))
    _active = (*_active, rule)
    _hints = tuple(sorted({hint for known in _active for hint in known.hints}))
    _generation += 1
    _redact_short.cache_clear()
    return rule


def rules() -> tuple[SecretRule, ...]:
    """Every rule in force: the built-in ones, then the registered ones."""
    return _active


def generation() -> int:
    """A number that changes whenever a rule is registered (for callers that memoize redacted text)."""
    return _generation


# -- the normalized view --------------------------------------------------------------------------

# What the view rewrites: a run of characters outside printable ASCII, a percent escape, a line
# continuation (an odd run of backslashes before a line break), and a backslash escape at any depth
# of escaping. Each backslash alternative starts at the left edge of its run and takes it whole.
_SPECIAL = re.compile(
    r"[^\t\n\r\x20-\x7e]++"
    r"|%[0-9A-Fa-f]{2}"
    r"|(?<!\\)(?:\\\\)*+\\\r?\n"
    r"|(?<!\\)\\++(?:[nrt\"']|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2})"
)
CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*+)\\\r?\n")
"""A shell line continuation: an odd run of backslashes before a line break (group 1: the pairs before it)."""

# Cyrillic and Greek letters that look like Latin ones (Unicode's confusables), read as those.
_HOMOGLYPHS = str.maketrans(
    "АВСЕНІЈКМОРЅТХУҮаԁеһіјӏорԛѕԝхусΑΒΕΖΗΙΚΜΝΟΡΤΥΧονι",
    "ABCEHIJKMOPSTXYYadehijlopqswxycABEZHIKMNOPTYXovi",
)


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """One character as the rules see it: format, control and combining characters vanish; NFKC;
    a homoglyph of a Latin letter is that letter."""
    if unicodedata.category(char) in ("Cf", "Cc", "Mn", "Me"):
        return ""
    return unicodedata.normalize("NFKC", char).translate(_HOMOGLYPHS)


def _unescape(token: str) -> str:
    """A backslash escape of JSON or shell text: a line continuation vanishes (also JSON-escaped), a
    line break or tab reads as a space, an escaped quote as the quote, ``\\uXXXX`` and ``\\xXX`` as
    their character."""
    escaped = token.lstrip("\\")
    depth = len(token) - len(escaped)
    if escaped[0] in "\r\n" or (escaped == "n" and depth >= 2):
        return ""  # a continuation, or one escaped (``\\`` then ``\n``: JSON, or a one-line summary)
    if escaped[0] in "ux":
        return _fold(chr(int(escaped[1:], 16)))
    return escaped if escaped in ("'", '"') else " "


@dataclass(frozen=True)
class _View:
    """``text`` as the rules see it, built once per string, and the way back to ``text``.

    Piece ``i`` of ``text[sources[i]:source_ends[i]]`` was rewritten as ``view[starts[i]:stops[i]]``
    (character by character where ``aligned[i]``, else as a whole); between pieces, text is copied.
    """

    text: str
    view: str
    starts: tuple[int, ...] = ()
    stops: tuple[int, ...] = ()
    sources: tuple[int, ...] = ()
    source_ends: tuple[int, ...] = ()
    aligned: tuple[bool, ...] = ()

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of ``text`` that ``view[start:end]`` (not empty) stands for."""
        return self._source(start, 0), self._source(end - 1, 1)

    def _source(self, position: int, after: int) -> int:
        index = bisect_right(self.starts, position) - 1
        if index < 0:
            return position + after
        if position >= self.stops[index]:  # copied after the piece
            return self.source_ends[index] + position - self.stops[index] + after
        if self.aligned[index]:
            return self.sources[index] + position - self.starts[index] + after
        return self.source_ends[index] if after else self.sources[index]

    @cached_property
    def commands(self) -> list[int]:
        """Where simple commands end in the view (``|``, ``;``, ``&`` and line breaks)."""
        return [match.start() for match in _COMMAND_END.finditer(self.view)]


_COMMAND_END = re.compile(r"[|;&\n]")


def _view(text: str) -> _View:
    if _SPECIAL.search(text) is None:
        return _View(text, text)
    parts: list[str] = []
    starts: list[int] = []
    stops: list[int] = []
    sources: list[int] = []
    ends: list[int] = []
    aligned: list[bool] = []
    length = cursor = 0
    for match in _SPECIAL.finditer(text):
        start, end = match.span()
        parts.append(text[cursor:start])
        length += start - cursor
        cursor = end
        token = match.group()
        if token[0] == "\\":
            pieces = [(_unescape(token), start, end, False)]
        elif token[0] == "%":
            pieces = [(_fold(chr(int(token[1:], 16))), start, end, False)]
        else:  # a run of other characters: aligned where each one reads as one character
            pieces = []
            source = start
            for exact, group in groupby(map(_fold, token), lambda char: len(char) == 1):
                chars = list(group)
                pieces.append(("".join(chars), source, source + len(chars), exact))
                source += len(chars)
        for piece, source, source_end, exact in pieces:
            parts.append(piece)
            starts.append(length)
            length += len(piece)
            stops.append(length)
            sources.append(source)
            ends.append(source_end)
            aligned.append(exact)
    parts.append(text[cursor:])
    return _View(
        text, "".join(parts), tuple(starts), tuple(stops), tuple(sources), tuple(ends), tuple(aligned)
    )


# -- redaction ------------------------------------------------------------------------------------


def _spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are secrets (found on its view, mapped back), merged."""
    view = _view(text)
    found = _view_spans(view)
    return _merge([view.span(start, end) for start, end in found])


def _view_spans(view: _View) -> list[tuple[int, int]]:
    text = view.view
    lowered = text.lower()
    present = {hint for hint in _hints if hint in lowered}
    markers = [match.start() for match in re.finditer(re.escape(REDACTED), text)]
    found: list[tuple[int, int]] = []
    for rule in _active:
        if rule.hints and present.isdisjoint(rule.hints):
            continue
        if rule.anchors and not any(anchor in text for anchor in rule.anchors):
            continue
        for start, end in _matches(rule, view):
            found.extend(_around_markers(markers, start, end))
    return found


def _matches(rule: SecretRule, view: _View) -> Iterator[tuple[int, int]]:
    """The view spans ``rule`` redacts, left to right; each position is read a bounded number of times."""
    text = view.view
    search = rule.pattern.search
    groups = rule.pattern.groupindex
    contexts = [match.start() for match in rule.context.finditer(text)] if rule.context else None
    position = 0
    rejected = None  # a rescanning rule's last rejected match, with what its check reads around it
    while position <= len(text) and (match := search(text, position)) is not None:
        surroundings = text[max(0, match.start() - 1) : match.end() + 3] if rule.rescan else None
        accepted = (
            (contexts is None or _in_context(view, contexts, match.start()))
            and (surroundings is None or surroundings != rejected)
            and (rule.check is None or rule.check(match, text))
        )
        if not accepted:
            rejected = surroundings
            resume = match.start("secret") if rule.rescan else match.end()
            position = max(resume, match.start() + 1)
            continue
        start, end = match.span("secret") if "secret" in groups and match.group("secret") else match.span()
        if "bare" in groups and match.group("bare"):
            end = _BARE_REST.match(text, end).end()  # type: ignore[union-attr]
        else:
            value = text[start:end]
            inner = _unquoted(value)
            if inner != value:
                start, end = start + 1, end - 1
        if end > start:
            yield start, end
        position = max(end, match.end(), match.start() + 1)


def _in_context(view: _View, contexts: list[int], at: int) -> bool:
    """Whether a context word starts before ``at`` in the simple command that holds ``at``."""
    before = bisect_left(contexts, at) - 1
    if before < 0:
        return False
    boundary = bisect_left(view.commands, at) - 1
    return boundary < 0 or view.commands[boundary] < contexts[before]


def _around_markers(markers: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``[start, end)`` outside earlier ``[REDACTED]`` markers (never redacted twice)."""
    parts: list[tuple[int, int]] = []
    cursor = start
    for marker in markers[bisect_left(markers, start) : bisect_left(markers, end - len(REDACTED) + 1)]:
        if marker > cursor:
            parts.append((cursor, marker))
        cursor = marker + len(REDACTED)
    if end > cursor:
        parts.append((cursor, end))
    return parts


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


_PASSES = 6


def _redact(text: str) -> str:
    # A replacement can change what a rule sees around it (a value now holds a marker), so passes
    # repeat until nothing changes; each pass that changes the text removes characters that are not
    # markers, so this settles, and the result is idempotent.
    for _ in range(_PASSES):
        redacted = _redact_once(text)
        if redacted == text:
            return text
        text = redacted
    return REDACTED


def _redact_once(text: str) -> str:
    spans = _spans(text)
    if not spans:
        return text
    out: list[str] = []
    cursor = 0
    for start, end in spans:
        out.append(text[cursor:start])
        out.append(REDACTED)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


_CACHED_CHARS = 1024  # targets repeat (the same paths and commands), so short ones are memoized


@lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return _redact(text)


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED]`` and the rest kept; idempotent."""
    if len(text) <= _CACHED_CHARS:
        return _redact_short(text)
    return _redact(text)
