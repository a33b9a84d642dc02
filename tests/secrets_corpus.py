"""Synthetic, real-looking secrets in the places they turn up in agent tool calls.

Every value is assembled at run time from a seeded generator and the vendor's public prefix, so the
repository holds no credential-shaped literal. ``Shape.secrets`` lists what must not survive
anywhere: the value as written, the value as the rules see it (zero-width characters removed,
fullwidth letters folded), and a distinctive stretch of its random body.
"""

from __future__ import annotations

import random
import string
import unicodedata
from dataclasses import dataclass

__all__ = ["CLASSES", "CORPUS", "Shape", "visible"]

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"

ZWSP, SOFT_HYPHEN, ZWJ, WORD_JOINER, BOM = "\u200b", "\u00ad", "\u200d", "\u2060", "\ufeff"


@dataclass(frozen=True)
class Shape:
    """One secret in context: ``text`` is what a tool call carries, ``secrets`` what must not survive."""

    name: str
    kind: str
    text: str
    secrets: tuple[str, ...]


def visible(text: str) -> str:
    """``text`` as a reader sees it: NFKC, with format characters removed, Cyrillic look-alikes of
    Latin letters read as those."""
    return "".join(
        unicodedata.normalize("NFKC", c) for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Mn")
    ).translate(_LOOK_ALIKES)


_LOOK_ALIKES = str.maketrans("АВСЕНКМОРТХаеорсух", "ABCEHKMOPTXaeopcyx")
CYRILLIC_A = "\u0410"


class _Maker:
    def __init__(self) -> None:
        self.rng = random.Random(20261201)
        self.shapes: list[Shape] = []

    def body(self, n: int, alphabet: str = ALNUM) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            if alphabet != ALNUM or (any(c.isdigit() for c in value) and any(c.isupper() for c in value)):
                return value

    def password(self) -> str:
        words = ["amber", "falcon", "violet", "granite", "harbor", "lantern", "meadow", "copper"]
        return f"{self.rng.choice(words)}{self.rng.randrange(10, 99)}{self.rng.choice('!#%*')}{self.body(4)}"

    def add(self, kind: str, name: str, text: str, *secrets: str) -> None:
        forms: list[str] = []
        for secret in secrets:
            for form in (secret, visible(secret)):
                if form not in forms:
                    forms.append(form)
        self.shapes.append(Shape(name, kind, text, tuple(forms)))


def _build() -> list[Shape]:
    m = _Maker()
    pw = m.password
    b = m.body

    # 1. Credentials as separate arguments.
    k = "argument"
    for flag in ("-u", "--user", "--user="):
        p = pw()
        sep = "" if flag.endswith("=") else " "
        m.add(k, f"curl {flag}", f"curl {flag}{sep}deploy:{p} https://api.internal.example/v1/status", p)
    p = pw()
    m.add(k, "mysql -pPASS", f"mysql -h db.internal -u root -p{p} shop_production", p)
    p = pw()
    m.add(k, "mysqldump -p'PASS'", f"mysqldump -uadmin -p'{p}' --all-databases > dump.sql", p)
    p = pw()
    m.add(k, "sshpass -p", f"sshpass -p {p} ssh ops@10.0.4.12 uptime", p)
    p = pw()
    m.add(k, "sshpass -pPASS", f"sshpass -p{p} scp build.tgz ops@host:/srv", p)
    p = pw()
    m.add(k, "docker login", f"docker login -u bob -p {p} registry.example.com", p)
    p = pw()
    m.add(k, "podman login --password", f"podman login --username ci --password {p} quay.io", p)
    secret = b(40, B64)
    m.add(k, "aws configure set secret", f"aws configure set aws_secret_access_key {secret}", secret)
    token = b(120, B64)
    m.add(
        k,
        "aws configure set session token",
        f"aws configure set aws_session_token {token} --profile ci",
        token,
    )
    uuid = "-".join(b(n, HEX) for n in (8, 4, 4, 4, 12))
    m.add(k, "heroku config:set", f"heroku config:set HEROKU_API_KEY {uuid} -a shop", uuid)
    p = pw()
    m.add(k, "openssl -passout", f"openssl genrsa -aes256 -passout pass:{p} -out server.key 4096", p)
    p = pw()
    m.add(k, "openssl -passin", f"openssl rsa -in server.key -passin pass:{p} -out plain.key", p)
    p = pw()
    m.add(k, "htpasswd -b", f"htpasswd -b /etc/nginx/.htpasswd alice {p}", p)
    p = pw()
    m.add(k, "htpasswd -bc", f"htpasswd -bcB .htpasswd admin {p}", p)
    p = pw()
    m.add(k, "az login -p", f"az login --service-principal -u http://ci-app -p {p} --tenant contoso", p)
    p = pw()
    m.add(k, "gh secret set --body", f"gh secret set DEPLOY_KEY --body {p} --repo acme/shop", p)
    p = pw()
    m.add(k, "gh secret set -b", f'gh secret set NPM_TOKEN -b"{p}"', p)
    p = pw()
    m.add(k, "netrc", f"printf 'machine api.example.com login bob password {p}' >> ~/.netrc", p)
    p = pw()
    m.add(k, "netrc password line", f"echo 'password {p}' >> ~/.netrc", p)
    p = pw()
    m.add(k, "keytool -storepass", f"keytool -list -keystore app.jks -storepass {p}", p)
    p = pw()
    m.add(k, "wget --http-password", f"wget --http-user=bob --http-password={p} https://files.example/x", p)

    # 2. Assignments.
    k = "assignment"
    for name in ("DB_PASS", "SMTP_PASS", "MYSQL_PWD", "REDIS_PASSWORD", "POSTGRES_PASSWORD"):
        p = pw()
        m.add(k, name, f"{name}={p} ./manage.py migrate", p)
    nrak = "NRAK-" + b(27, UPPER_DIGITS)
    m.add(k, "NEW_RELIC_LICENSE", f"NEW_RELIC_LICENSE={nrak} node server.js", nrak)
    p = pw()
    m.add(k, "json pass", f'curl -X POST -d \'{{"user": "bob", "pass": "{p}"}}\' https://api/login', p)
    p = pw()
    m.add(k, "escaped json password", f'curl -d "{{\\"password\\":\\"{p}\\"}}" https://api/session', p)
    p = pw()
    m.add(k, "line continuation", f"PGPASSWORD=\\\n  {p} psql -h db -U app", p)
    p = pw()
    m.add(k, "yaml password", f"printf 'db:\\n  password: {p}\\n' > config.yml", p)
    token = b(32)
    m.add(k, "export API_TOKEN", f'export API_TOKEN="{token}" && make deploy', token)
    p = pw()
    m.add(k, "docker -e", f"docker run -e POSTGRES_PASSWORD={p} -d postgres:16", p)
    p = pw()
    m.add(k, "kubectl from-literal", f"kubectl create secret generic db --from-literal=password={p}", p)
    secret = b(34, URLSAFE)
    m.add(k, "powershell env", f'$env:AZURE_CLIENT_SECRET="{secret}"; az account show', secret)
    p = pw()
    m.add(k, "database url", f"DATABASE_URL=postgres://app:{p}@db.internal:5432/shop ./run", p)
    secret = b(40)
    m.add(k, "client_secret yaml", f"client_secret: {secret}", secret)
    secret = b(40, B64)
    m.add(k, "aws secret env", f"AWS_SECRET_ACCESS_KEY={secret} aws s3 ls", secret)
    p = pw()
    m.add(k, "java property", f"mvn deploy -Dpassword={p} -DskipTests", p)

    # 3. Vendor tokens glued to a word character.
    k = "glued"
    akia = "AKIA" + b(16, UPPER_DIGITS)
    m.add(k, "key_AKIA", f"echo key_{akia} >> notes", akia)
    ghp = "ghp_" + b(36)
    m.add(k, "token%3Dghp_", f"curl 'https://ci.example/hook?x=1&token%3D{ghp}'", ghp, ghp[-12:])
    ant = "sk-ant-api03-" + b(80, URLSAFE) + "AA"
    m.add(k, "get_sk-ant-", f"get_{ant[:50]}", ant[:50], ant[20:50])
    pat = "github_pat_" + b(22) + "_" + b(59)
    m.add(k, "x-github_pat_", f"GH=x-{pat} gh repo list", pat, pat[-16:])
    glpat = "glpat-" + b(20, URLSAFE)
    m.add(k, "prefix glpat", f"git remote add origin https://oauth2{glpat}x@gitlab.com/a/b.git", glpat[6:])
    xoxb = "xoxb-" + b(12, string.digits) + "-" + b(13, string.digits) + "-" + b(24)
    m.add(k, "slack glued", f"SLACK=bot{xoxb} ./notify.sh", xoxb, xoxb[-12:])
    aiza = "AIza" + b(35, URLSAFE)
    m.add(k, "google path glued", f"cat config/key{aiza}.json", aiza)
    hf = "hf_" + b(34, string.ascii_letters)
    m.add(k, "hf glued after underscore", f"TOKEN_{hf} python train.py", hf)
    stripe = "sk_live_" + b(24)
    m.add(k, "stripe glued", f"stripe_key:{stripe}", stripe)
    npm = "npm_" + b(36)
    m.add(k, "npm glued", f"echo //registry.npmjs.org/:_authToken={npm} > .npmrc", npm)
    jwt = "eyJ" + b(20, URLSAFE) + ".eyJ" + b(40, URLSAFE) + "." + b(43, URLSAFE)
    m.add(k, "jwt glued", f"curl -b session{jwt} https://app", jwt, jwt[-20:])
    sk = "sk-proj-" + b(48, URLSAFE)
    m.add(k, "openai glued", f"OPENAI{sk}", sk)
    tool = "get_" + "sk-ant-api03-" + b(40, URLSAFE)
    m.add(k, "tool name get_sk-ant", tool, tool[4:], tool[-16:])

    # 4. Evasion: zero-width and format characters, fullwidth letters.
    k = "evasion"
    ghp = "ghp_" + b(36)
    m.add(k, "zwsp in ghp", f"git clone https://{ghp[:10]}{ZWSP}{ghp[10:]}@github.com/a/b", ghp, ghp[10:])
    ant = "sk-ant-api03-" + b(60, URLSAFE)
    m.add(k, "soft hyphen in sk-ant", f"ANTHROPIC={ant[:20]}{SOFT_HYPHEN}{ant[20:]} run", ant, ant[20:])
    akia = "AKIA" + b(16, UPPER_DIGITS)
    full = "".join(chr(ord(c) + 0xFEE0) for c in akia)
    m.add(k, "fullwidth AKIA", f"aws sts get-caller-identity # {full}", full, akia)
    p = pw()
    fullname = "".join(chr(ord(c) + 0xFEE0) for c in "PASSWORD")
    m.add(k, "fullwidth assignment name", f"{fullname}={p} ./start", p)
    xoxb = "xoxb-" + b(12, string.digits) + "-" + b(24)
    m.add(k, "zwj in slack", f"notify {xoxb[:8]}{ZWJ}{xoxb[8:]}", xoxb, xoxb[8:])
    glpat = "glpat-" + b(20, URLSAFE)
    m.add(k, "word joiner in glpat", f"export GL={glpat[:7]}{WORD_JOINER}{glpat[7:]}", glpat, glpat[7:])
    ghp = "ghp_" + b(36)
    m.add(k, "bom in ghp", f"{ghp[:4]}{BOM}{ghp[4:]}", ghp, ghp[4:])
    ant = "sk-ant-api03-" + b(40, URLSAFE)
    full = "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in ant)
    m.add(k, "fullwidth sk-ant", f"curl -H 'x-api-key: {full}'", full, ant)
    bearer = b(40, URLSAFE)
    m.add(k, "zwsp in bearer", f"curl -H 'Authorization: Bea{ZWSP}rer {bearer}' https://api", bearer)
    ghp = "ghp_" + b(36)
    mixed = f"{ghp[:3]}{ZWSP}{ghp[3:9]}{SOFT_HYPHEN}{ghp[9:20]}{ZWSP}{ghp[20:]}"
    m.add(k, "several invisible characters", f"TOKEN={mixed} gh api user", ghp, ghp[20:])
    ghp = "ghp_" + b(36)
    m.add(k, "variation selector", f"echo {ghp[:12]}\ufe0f{ghp[12:]}", ghp, ghp[12:])
    ghp = "ghp_" + b(36)
    m.add(k, "control character", f"echo {ghp[:12]}\x00{ghp[12:]}", ghp, ghp[12:])

    ghp = "ghp_" + b(36)
    hexed = ghp.encode().hex()
    m.add(k, "hex-encoded token", f"echo {hexed} | xxd -r -p > ~/.gh-token", hexed, hexed[20:60])
    ghp = "ghp_" + b(36)
    escaped = "".join(f"\\x{byte:02x}" for byte in ghp.encode())
    m.add(k, "\\x-escaped token", f"printf '{escaped}' > ~/.gh-token", escaped, escaped[40:120])
    ghp = "ghp_" + b(36)
    m.add(
        k,
        "token split by a continuation",
        f"export GH_TOKEN={ghp[:14]}\\\n{ghp[14:]} && gh auth status",
        ghp[14:],
    )
    ghp = "ghp_" + b(36)
    homoglyph = ghp[:12] + CYRILLIC_A + ghp[13:]
    m.add(
        k,
        "cyrillic homoglyph in ghp",
        f"git clone https://{homoglyph}@github.com/a/b",
        homoglyph,
        homoglyph[13:],
    )
    ant = "sk-ant-api03-" + b(40, URLSAFE)
    homoglyph = ant[:20] + "\u0435" + ant[21:]
    m.add(
        k, "cyrillic homoglyph in sk-ant", f"ANTHROPIC_API_KEY={homoglyph} claude", homoglyph, homoglyph[21:]
    )

    # 5. Order of sanitizers: normalization and windowing.
    k = "order"
    p = pw()
    m.add(k, "url as a path", f"https://app:{p}@host.example/a", p)
    p = pw()
    m.add(k, "url already normalized", f"https:/app:{p}@host.example/a", p)
    ant = "sk-ant-api03-" + b(60, URLSAFE)
    m.add(k, "spaces before the window", " " * 65520 + ant, ant, ant[:8] + ant[8:16], ant[-20:])
    ghp = "ghp_" + b(36)
    m.add(k, "word cut by the window", "x" * 70000 + " " + ghp, ghp, ghp[:12])
    ghp = "ghp_" + b(36)
    m.add(k, "double slashes around a token", f"/srv//keys//{ghp}//x", ghp)
    ant = "sk-ant-api03-" + b(40, URLSAFE)
    m.add(k, "dot segments around a token", f"/srv/a/../{ant}/./x", ant)
    key = "\n".join(b(64, B64) for _ in range(20))
    tail = "ghp_" + b(36)
    m.add(
        k,
        "huge word after a private key",
        "-----BEGIN PRIVATE KEY-----" + key.replace("\n", "") * 60 + "-----END PRIVATE KEY-----" + tail,
        tail[:20],
        key[:64],
    )

    # 6. Secret-bearing URL paths.
    k = "url path"
    slack = f"T{b(8, UPPER_DIGITS)}/B{b(10, UPPER_DIGITS)}/{b(24)}"
    m.add(k, "slack webhook", f"curl -X POST https://hooks.slack.com/services/{slack} -d @msg.json", slack)
    flow = f"{b(11, UPPER_DIGITS)}/{b(18, string.digits)}/{b(24)}"
    m.add(k, "slack workflow", f"https://hooks.slack.com/workflows/{flow}", flow)
    discord = f"{b(18, string.digits)}/{b(68, URLSAFE)}"
    m.add(k, "discord webhook", f"curl https://discord.com/api/webhooks/{discord}", discord)
    legacy = f"{b(18, string.digits)}/{b(68, URLSAFE)}"
    m.add(k, "discordapp webhook", f"https://discordapp.com/api/webhooks/{legacy}/slack", legacy)
    bot = f"{b(6, string.digits)}:AA{b(33, URLSAFE)}"
    m.add(k, "telegram getMe", f"curl https://api.telegram.org/bot{bot}/getMe", bot)
    bot = f"{b(10, string.digits)}:AA{b(33, URLSAFE)}"
    m.add(k, "telegram sendMessage", f"https://api.telegram.org/bot{bot}/sendMessage?chat_id=1", bot)
    teams = f"{b(8, HEX)}-{b(4, HEX)}@{b(8, HEX)}/IncomingWebhook/{b(32, HEX)}/{b(8, HEX)}"
    m.add(k, "teams webhook", f"https://acme.webhook.office.com/webhookb2/{teams}", teams)
    zap = f"{b(7, string.digits)}/{b(6, 'abcdefghijklmnopqrstuvwxyz0123456789')}"
    m.add(k, "zapier hook", f"curl https://hooks.zapier.com/hooks/catch/{zap}/", zap)

    jwt = "eyJ" + b(20, URLSAFE) + ".eyJ" + b(60, URLSAFE) + "." + b(43, URLSAFE)
    m.add(k, "jwt in a url path", f"https://app.example.com/auth/callback/{jwt}/done", jwt, jwt[-20:])
    bare = "eyJ" + b(20, URLSAFE) + ".eyJ" + b(60, URLSAFE)
    m.add(k, "unsigned jwt in a path", f"/var/cache/sessions/{bare}", bare, bare[:23], bare[-20:])
    ghp = "ghp_" + b(36)
    m.add(k, "zwj ghp in a url path", f"https://ci.example/{ghp[:9]}{ZWJ}{ghp[9:]}/logs", ghp, ghp[9:])

    # 7. Multi-line commands: continuations, heredocs, scripts.
    k = "multi-line"
    p = pw()
    m.add(
        k,
        "curl -u after a continuation",
        f"set -e\ncurl -sf \\\n  -u deploy:{p} \\\n  https://api.example/v1",
        p,
    )
    p = pw()
    m.add(k, "mysql -p after continuations", f"mysql \\\n  -h db.internal \\\n  -p{p} \\\n  shop", p)
    p = pw()
    m.add(
        k, "docker login across lines", f"docker login \\\n  -u ci \\\n  -p {p} \\\n  registry.example.com", p
    )
    p = pw()
    m.add(k, "heredoc env file", f"cat > .env <<'EOF'\nDB_HOST=db\nDB_PASSWORD={p}\nEOF\n./run", p)
    token = b(40)
    m.add(k, "script with an api token", f"#!/bin/sh\nset -eu\nexport API_TOKEN={token}\nmake deploy", token)
    p = pw()
    m.add(k, "yaml in a heredoc", f"cat <<EOF > config.yml\ndatabase:\n  password: {p}\n  user: app\nEOF", p)

    # 8. Other stores: what a preview or diff shows.
    k = "preview"
    line = b(64, B64)
    m.add(k, "pem body line", f"keys/server.pem:2:{line}", line)
    body = "\n".join(b(64, B64) for _ in range(4))
    m.add(
        k,
        "pem block",
        f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----",
        *body.split(),
    )
    p = pw()
    m.add(k, "json password in a command", f'http POST :8000/login <<< \'{{"password": "{p}"}}\'', p)
    bearer = b(48, URLSAFE)
    m.add(k, "bearer header", f"curl -H 'Authorization: Bearer {bearer}' https://api", bearer)
    basic = b(28, B64) + "=="
    m.add(k, "basic header", f'curl -H "Authorization: Basic {basic}" https://api', basic)
    key = b(32, HEX)
    m.add(k, "x-api-key header", f"curl -H 'X-Api-Key: {key}' https://api", key)
    cookie = b(40, URLSAFE)
    m.add(k, "cookie header", f"curl -H 'Cookie: session={cookie}' https://app", cookie)
    token = b(30)
    m.add(k, "query token", f"curl 'https://api.example.com/v1?access_token={token}&page=2'", token)
    p = pw()
    m.add(k, "url credentials", f"git push https://bob:{p}@git.example.com/repo.git", p)
    ghp = "ghp_" + b(36)
    m.add(k, "token as url user", f"git clone https://{ghp}@github.com/a/b", ghp)
    sg = "SG." + b(22, URLSAFE) + "." + b(43, URLSAFE)
    m.add(k, "sendgrid", f"SENDGRID={sg}", sg)
    whsec = "whsec_" + b(32)
    m.add(k, "stripe webhook secret", f"stripe listen --forward-to :3000 {whsec}", whsec)
    vault = "hvs." + b(24, URLSAFE)
    m.add(k, "vault token", f"vault login {vault}", vault)
    nr = "NRAK-" + b(27, UPPER_DIGITS)
    m.add(k, "new relic bare", f"newrelic apm --key {nr}", nr)
    twilio = "SK" + b(32, HEX)
    m.add(k, "twilio key", f"twilio api:core:keys:fetch --sid {twilio}", twilio)
    return m.shapes


CORPUS: tuple[Shape, ...] = tuple(_build())
"""Every shape, in class order."""

CLASSES: tuple[str, ...] = tuple(dict.fromkeys(shape.kind for shape in CORPUS))
"""The classes: argument, assignment, glued, evasion, order, url path, multi-line, preview."""
