"""The tables a scan reads instead of loading detect-secrets or the rule files
(memoir/data/secret_plugin_table.json, secret_rule_table.json) are what the installed
plugins and the shipped files give; and memoir.secrets.screen, which decides from them
whether the plugins need to run at all, never skips a text they find something in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir import secrets
from memoir.secrets import plugins, screen
from memoir.secrets.rules import read_rule_files, rule_table
from memoir.secrets.screen import fold

TABLE = screen.plugin_table()


def _as_json(value: object) -> object:
    """``value`` as the JSON table holds it (tuples become lists)."""
    return json.loads(json.dumps(value))


LINES = [
    "aws_access_key_id = AKIAQYLPMN5HHHFPZAM2",
    "DB_PASSWORD=s3cr3tV4lue",
    "AUTH_TOKEN=9f8e7d6c5b4a39281706aa",
    "export SESSION_KEY='q8Zr2LmX0vT7bN4kP1sW9yD3'",
    'my_api_key = "abc123xyz789"',
    "A=1; PASSWORD=hunter2hunter2 && export TOKEN='Zx81kQ9mW2pL7vB4nC6tR3yU'",
    "MTIzNDU2Nzg5MDEyMzQ1Njc4.YAaBbC.dEfGhIjKlMnOpQrStUvWxYz012345",  # Discord: no gate
    "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ",  # Telegram: no gate
    "sha = 'deadbeef01'",  # a short quoted hex run: may be entropy
    'send("q8Zr2LmX0vT7bN4kP1sW9yD3xQ") now',  # a quoted random run alone
    "check('9f8e7d6c5b4a3928') first",
    "ſecret = 'abcdefgh12345678'; \u212aEY: q8Zr2LmX0vT7bN4k",
]
BENIGN = [
    "The api key lives in the vault; read it with client.get(key) at start.",
    '{"file_path":"shop/coupons.py","old_string":"now = now or datetime.now()"}',
    "Use `with engine.connect() as conn:` and set `prepare_threshold=None` in psycopg.",
    "password reset emails go through the auth service (see docs/auth.md)",
]


def test_the_plugin_table_is_what_the_installed_plugins_give() -> None:
    live = plugins.table_values()
    assert set(TABLE) == set(live)
    for name, value in live.items():
        assert TABLE[name] == _as_json(value), name
    assert len(TABLE["SPECIFIC"]) == len(plugins.GATED)


def test_the_rule_table_is_what_the_rule_files_give() -> None:
    rules, tops = read_rule_files()
    assert rule_table() == (_as_json(rules), _as_json(tops))
    assert len(rules) >= 200


@pytest.mark.parametrize("index", range(len(TABLE["ENTROPY"])))
def test_no_value_shorter_than_the_entropy_bound_passes_the_limit(index: int) -> None:
    """A string of n characters has at most log2(n) bits each, reached when they all
    differ: at the bound's length less one, even that is at or under the plugin's limit
    (and one character past the bound, such a string is over it: the bound is close)."""
    plugin = plugins._ENTROPY[index]
    _pattern, _flags, charset, length = TABLE["ENTROPY"][index]
    widest = "".join(sorted(set(charset), key=lambda ch: (ch.isdigit(), ch)))  # not a number
    assert plugin.calculate_shannon_entropy(widest[: length - 1]) <= plugin.entropy_limit
    assert plugin.calculate_shannon_entropy(widest[: length + 1]) > plugin.entropy_limit


def _plugins_find(text: str) -> list[tuple[int, int, int, str]]:
    lines = secrets._lines(text)
    found = secrets._needles().lines_of(text, fold(text), [o for o, _ in lines])
    return secrets._plugin_findings(text, lines, found, gates=True)


def _screen(text: str) -> bool:
    lines = secrets._lines(text)
    found = secrets._needles().lines_of(text, fold(text), [o for o, _ in lines])
    return screen.may_find([line for _, line in lines], found)


@pytest.mark.parametrize("line", LINES)
def test_the_screen_lets_through_each_kind_of_plugin_hit(line: str) -> None:
    assert _screen(line)
    if line != "sha = 'deadbeef01'":
        assert _plugins_find(line), line


@pytest.mark.parametrize("text", BENIGN)
def test_the_screen_skips_text_no_plugin_regex_matches(text: str) -> None:
    assert not _screen(text)
    assert not _plugins_find(text)


def test_a_text_the_screen_skips_is_still_read_by_the_rules() -> None:
    text = 'config = {"api_key": "abc123xyz789", "user": "ann"}'  # no plugin matches it
    assert not _screen(text)
    assert [f.kind for f in secrets.find_secrets(text)] == ["generic_api_key"]


_noise = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz ABCDEFKSTY0123456789=:'\"_-./;&\n\u212a", max_size=40
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LINES + BENIGN), _noise), max_size=8))
def test_a_text_the_screen_skips_holds_nothing_the_plugins_find(parts: list[str]) -> None:
    text = " ".join(parts)
    if not _screen(text):
        assert _plugins_find(text) == []


def test_the_plugins_load_only_for_a_text_they_may_match() -> None:
    code = (
        "import sys\nfrom memoir.secrets import mask\n"
        "print(mask(sys.argv[1]))\nprint('detect_secrets' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for text, shown, loaded in (
        (BENIGN[0], BENIGN[0], "False"),
        ("DB_PASSWORD=s3cr3tV4lue", "DB_PASSWORD=[redacted: secret]", "True"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", code, text],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
        assert out.stdout.splitlines() == [shown, loaded]
