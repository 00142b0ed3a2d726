"""Today's credential formats are found wherever a transcript carries them (issue 41, 1).

A table of formats × a table of places: every format is planted in prose, quoted in code,
inside a JSON tool result, on an ``export``/``.env`` line, in a URL, and in a shell command,
and after :func:`memoir.secrets.redact` none of its secret characters is left.

The tokens are made here, at random from a fixed seed, in each service's shape: nothing in
this file is a credential, and none reads as one to a push-protection scanner (each is
built by concatenation at run time).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from memoir.secrets import find_secrets, mask, redact

_RNG = random.Random(41)
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _jwt() -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    head = part({"alg": "HS256", "typ": "JWT"})
    body = part({"sub": rand(12), "name": "Ann Example", "iat": 1733390000})
    return f"{head}.{body}.{rand(43, B64URL)}"


def _pem() -> str:
    body = "\n".join(rand(64, ALNUM + "+/") for _ in range(4))
    marker = "PRIVATE" + " KEY"
    return f"-----BEGIN RSA {marker}-----\n{body}\n-----END RSA {marker}-----"


@dataclass(frozen=True)
class Format:
    """``snippet``: how the credential is written; ``secrets``: the parts that must go.
    ``shape``: ``token`` (one word), ``text`` (a phrase) or ``block`` (lines)."""

    name: str
    snippet: str
    secrets: tuple[str, ...]
    shape: str = "token"


def token(name: str, value: str) -> Format:
    return Format(name, value, (value,))


_AWS_ID = "AKIA" + rand(16, string.ascii_uppercase + "234567")
_AWS_SECRET = rand(40, ALNUM + "/+")
_AZURE_KEY = base64.b64encode(_RNG.randbytes(64)).decode()
_PG_PASSWORD = "Zq8" + rand(13)
_PEM = _pem()
_PW1, _PW2, _PW3 = "Tr0ub4dor&" + rand(4), "s3cr3t-" + rand(8), rand(6) + "-" + rand(18)

FORMATS: tuple[Format, ...] = (
    token("anthropic api key", "sk-ant-" + "api03-" + rand(93, B64URL) + "AA"),
    token("anthropic admin key", "sk-ant-" + "admin01-" + rand(93, B64URL) + "AA"),
    token("openai project key", "sk-" + "proj-" + rand(74, B64URL) + "T3Blbk" + "FJ" + rand(74)),
    token("openai project key, no marker", "sk-" + "proj-" + rand(120, B64URL)),
    token("openai service account key", "sk-" + "svcacct-" + rand(58) + "T3Blbk" + "FJ" + rand(58)),
    token("openai admin key", "sk-" + "admin-" + rand(74) + "T3Blbk" + "FJ" + rand(74)),
    token("openai legacy key", "sk-" + rand(20) + "T3Blbk" + "FJ" + rand(20)),
    token("openai legacy key, 48", "sk-" + rand(48)),
    token("github classic pat", "ghp" + "_" + rand(36)),
    token("github oauth token", "gho" + "_" + rand(36)),
    token("github user-to-server token", "ghu" + "_" + rand(36)),
    token("github server-to-server token", "ghs" + "_" + rand(36)),
    token("github refresh token", "ghr" + "_" + rand(36)),
    token("github fine-grained pat", "github" + "_pat_" + rand(22) + "_" + rand(59)),
    token("gitlab pat", "glpat" + "-" + rand(20, B64URL)),
    token("google api key", "AIza" + "Sy" + rand(33, B64URL)),
    token("google oauth client secret", "GOCSPX" + "-" + rand(28, B64URL)),
    token("hugging face token", "hf" + "_" + rand(34, string.ascii_letters)),
    Format(
        "aws access key and secret",
        f"aws_access_key_id={_AWS_ID} aws_secret_access_key={_AWS_SECRET}",
        (_AWS_ID, _AWS_SECRET),
        "text",
    ),
    Format(
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=stagingstore;AccountKey="
        + _AZURE_KEY
        + ";EndpointSuffix=core.windows.net",
        (_AZURE_KEY,),
    ),
    token(
        "slack bot token",
        "xoxb-" + rand(12, "0123456789") + "-" + rand(13, "0123456789") + "-" + rand(24),
    ),
    token(
        "slack user token",
        "xoxp-" + "-".join(rand(12, "0123456789") for _ in range(3)) + "-" + rand(32, HEX),
    ),
    token(
        "slack webhook",
        "https://hooks.slack.com/services/T"
        + rand(8, string.ascii_uppercase)
        + "/B"
        + rand(8, string.ascii_uppercase)
        + "/"
        + rand(24),
    ),
    token("stripe live key", "sk" + "_live_" + rand(24)),
    token("stripe restricted key", "rk" + "_live_" + rand(24)),
    token("twilio api key", "SK" + rand(32, HEX)),
    token("sendgrid key", "SG." + rand(22, B64URL) + "." + rand(43, B64URL)),
    token("npm token", "npm" + "_" + rand(36)),
    token("pypi token", "pypi-" + "AgEIcHlwaS5vcmc" + rand(70, B64URL)),
    token("databricks token", "dapi" + rand(32, HEX)),
    token("digitalocean token", "dop" + "_v1_" + rand(64, HEX)),
    token("shopify access token", "shpat" + "_" + rand(32, HEX)),
    token("shopify shared secret", "shpss" + "_" + rand(32, HEX)),
    token("linear api key", "lin" + "_api_" + rand(40)),
    token("notion token", "secret" + "_" + rand(43)),
    token("notion token, ntn", "ntn" + "_" + rand(11, "0123456789") + rand(35)),
    token("jwt", _jwt()),
    Format("private key block", _PEM, tuple(_PEM.split("\n")[1:-1]), "block"),
    Format(
        "basic-auth url",
        f"postgres://deploy:{_PG_PASSWORD}@db.staging.example.com:5432/app",
        (_PG_PASSWORD,),
    ),
    Format("password told in prose", f"my password is {_PW1}", (_PW1,), "text"),
    Format(
        "password for a thing, told in prose",
        f"my password for the staging database is {_PW2}",
        (_PW2,),
        "text",
    ),
    Format("token told in prose", f"the token: {_PW3}", (_PW3,), "text"),
)


def _json_tool_output(s: str) -> str:
    result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": f"$ cat notes\n{s}\n"}
    return json.dumps({"role": "user", "content": [result]})


def _export(s: str) -> str:
    return (
        f"export STAGING_CREDENTIAL={s}"
        if " " not in s and "\n" not in s
        else (f'STAGING_NOTE="{s}"')
    )


def _url(s: str) -> str:
    if s.startswith(("https://", "postgres://")):
        return f"the service is at {s}/v1/items?page=2 now"
    return f"GET https://staging.example.com/api/v1/items?key={s}&page=2"


def _shell(s: str) -> str:
    if s.startswith(("https://", "postgres://")):
        return f"$ psql '{s}' -c 'select 1' && curl -sS '{s}'"
    if " " in s or "\n" in s:
        return f"$ printf '%s\\n' '{s}' >> ~/notes.txt"
    return f"$ curl -sS -H 'Authorization: Bearer {s}' https://staging.example.com/api/v1/me"


PLACES: dict[str, Callable[[str], str]] = {
    "prose": lambda s: f"From now on, always call the staging API with {s} please.",
    "code": lambda s: f'STAGING = """{s}"""\nclient = Client(STAGING)',
    "json tool output": _json_tool_output,
    "export line": _export,
    "url": _url,
    "shell": _shell,
}
# a private key block has no place in a URL: the one cell of the matrix left out
NOT_APPLICABLE = {("private key block", "url")}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
def test_each_format_is_masked_in_each_place(fmt: Format, place: str) -> None:
    if (fmt.name, place) in NOT_APPLICABLE:
        pytest.skip("no such place for this format")
    text = PLACES[place](fmt.snippet)
    done = redact(text)
    left = [
        s
        for s in fmt.secrets
        if s in done.text or json.dumps(s)[1:-1] in done.text or s[:12] in done.text
    ]
    assert not left, f"{fmt.name} in {place}: {done.text!r}"
    assert done.total >= 1 and mask(text) == done.text
    assert "[redacted: " in done.text


def test_the_matrix_is_every_format_in_every_place() -> None:
    names = {f.name for f in FORMATS}
    assert len(names) == len(FORMATS) >= 40
    assert set(PLACES) == {"prose", "code", "json tool output", "export line", "url", "shell"}


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
def test_a_finding_covers_the_secret_and_not_the_sentence(fmt: Format) -> None:
    """The span is the credential, not the words around it: the sentence stays readable."""
    text = f"From now on, always call the staging API with {fmt.snippet} please."
    spans = [text[f.start : f.end] for f in find_secrets(text)]
    for secret in fmt.secrets:
        assert any(secret in span for span in spans), (secret, spans)
    masked = mask(text)
    assert masked.startswith("From now on, always call the staging API with")
    assert masked.endswith("please.")
