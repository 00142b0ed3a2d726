"""The text of search (pure): the query a raw string becomes, and the snippets quoted.

Query sanitising: any raw string → a safe, structured query.

A raw query is read the way a person types into a search box: bare words (all must
match), ``"quoted phrases"``, ``OR`` between two terms (either may match), ``-word`` or
``NOT word`` (must not match — but ``--flag`` is a pasted command-line flag, and ``NOT``
before an all-capitals word, ``NOT NULL``, pasted error text: both are searched for),
``word*`` (prefix). Everything else — stray quotes, parentheses, ``NEAR(``, column
filters, SQL fragments, control characters — is only punctuation between words. Words are
runs of letters and digits; brackets, commas and operator signs separate terms, while a
token such as ``foo-bar``, ``don't`` or ``journal_mode`` becomes the phrase of its words.
CJK text has no spaces, so both the indexed documents and the query are segmented per
character (:func:`segment_cjk`) and a CJK run becomes a phrase. The structure is rendered
by the backends' search modules: FTS5 MATCH syntax here (:func:`to_fts5`), PostgreSQL in
``postgres_search``.

Snippets made in Python: a window of an exchange's text around the first query
word, every query word marked ``\\x02`` … ``\\x03`` like FTS5's ``snippet()``. PostgreSQL's
search uses it for every hit (``ts_headline`` drops tag-like text), SQLite's for an
exchange whose text holds CJK (FTS5 quotes the index's segmented copy), and search for hits
the full-text index did not mark (vector-only hits). Query words are marked where the
index finds them: a CJK run whatever separators lie between its characters (the index reads
it per character), a word where a word begins — after a CJK character too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

from memoir.store.db import fold_accents

__all__ = [
    "CJK_CHARS",
    "MARK_END",
    "MARK_START",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "SNIPPET_CHARS",
    "STOPWORDS",
    "ParsedQuery",
    "Term",
    "any_content_word",
    "drop_ubiquitous",
    "has_cjk",
    "make_snippet",
    "marked_words",
    "meaning_text",
    "parse_query",
    "query_words",
    "segment_cjk",
    "to_fts5",
    "unsegment_cjk",
    "words_of",
]


MAX_QUERY_CHARS = 2000
MAX_TERMS = 32
MIN_PREFIX = 2

# the characters segmented one per token (a character-class body, for re and regex alike)
CJK_CHARS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # han
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002fa1f"  # han extensions
)


@cache
def _cjk() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """One CJK character; a boundary next to one with no white space on either side; the
    gap segmentation left between two. Compiled on first use (only text that is not ASCII
    needs them): the classes' wide ranges cost every process ~12 ms to compile."""
    char = re.compile(f"[{CJK_CHARS}]")
    boundary = re.compile(f"(?<=[{CJK_CHARS}])(?=[^\\s])|(?<=[^\\s])(?=[{CJK_CHARS}])")
    gap = re.compile(f"(?<=[{CJK_CHARS}])([\x02\x03]*) ([\x02\x03]*)(?=[{CJK_CHARS}])")
    return char, boundary, gap


_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r'(?P<neg>-?)"(?P<phrase>[^"]*)(?:"|$)|(?P<bare>[^\s"]+)')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# brackets and operator-like punctuation separate terms; other punctuation (- _ . ' / :)
# joins the words around it into a phrase
_SEPARATORS = re.compile(r"[()\[\]{}<>,;!?|&^~`]+")

# English stop words (PostgreSQL's `english` configuration drops them too), never useful
# as a single search term; kept inside phrases.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can did do does doing don down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own s same she should so some such t than
    that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will
    with you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a character :func:`segment_cjk` segments."""
    return not text.isascii() and _cjk()[0].search(text) is not None


def segment_cjk(text: str) -> str:
    """Put a space on each side of every CJK character (where there is none), so that
    word tokenizers see one token per character."""
    if not has_cjk(text):
        return text
    return _cjk()[1].sub(" ", text)


def unsegment_cjk(text: str) -> str:
    """Undo :func:`segment_cjk` between two CJK characters: a query term's words as typed
    (a CJK run whole again), for the words a snippet marks. It cannot tell a space that was
    typed between two CJK characters from one segmentation added, so text shown to a person
    is quoted from the stored original, never unsegmented. Highlight markers
    ``\\x02``/``\\x03`` between them are kept, and a mark that closes right where the next
    opens is merged into one."""
    if not text.isascii():
        text = _cjk()[2].sub(r"\1\2", text)
    return text.replace("\x03\x02", "")


def words_of(text: str) -> tuple[str, ...]:
    """The lower-cased words an index tokenizer sees in ``text`` (CJK per character)."""
    return tuple(w.lower() for w in _WORD.findall(segment_cjk(text)))


@dataclass(frozen=True, slots=True)
class Term:
    """One search term: a word (``len(words) == 1``) or a phrase.

    ``words`` are lower-cased letter/digit runs (CJK split per character); ``text`` is the
    term as typed, CJK-segmented and free of quotes and control characters, for parsers
    that tokenize themselves (PostgreSQL's ``websearch_to_tsquery``)."""

    words: tuple[str, ...]
    text: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """All ``groups`` must match (each group: any of its terms); no ``excluded`` may."""

    groups: tuple[tuple[Term, ...], ...] = ()
    excluded: tuple[Term, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.groups

    def loosened(self) -> ParsedQuery | None:
        """The same terms with any one sufficing (None when that changes nothing)."""
        if len(self.groups) < 2:
            return None
        terms = tuple(t for g in self.groups for t in g)
        return ParsedQuery(groups=(terms,), excluded=self.excluded)


def _term(piece: str, *, phrase: bool) -> Term | None:
    prefix = False
    if not phrase:
        stripped = piece.rstrip("*")
        prefix = stripped != piece
        piece = stripped.lstrip("+")
    text = segment_cjk(_CONTROL.sub(" ", piece)).strip()
    words = tuple(w.lower() for w in _WORD.findall(text))
    if not words:
        return None
    if len(words) == 1 and not phrase and words[0] in STOPWORDS and not prefix:
        return None
    if prefix and (len(words) > 1 or len(words[-1]) < MIN_PREFIX):
        prefix = False
    return Term(words=words, text=text, prefix=prefix)


@dataclass(frozen=True, slots=True)
class _Piece:
    """One token of a raw query as typed: an operator (``OR``/``AND``/``NOT``), or a term
    (``None`` when it holds no searchable word) and whether it is negated."""

    typed: str
    operator: bool
    term: Term | None = None
    negated: bool = False


def _pieces(raw: str) -> list[_Piece]:
    """The raw query's tokens, read as :func:`parse_query` reads them."""
    raw = _SEPARATORS.sub(" ", _CONTROL.sub(" ", raw[:MAX_QUERY_CHARS]))
    out: list[_Piece] = []
    pending_not = False
    for m in _TOKEN.finditer(raw):
        negated = pending_not
        if m.group("phrase") is not None:
            negated = negated or bool(m.group("neg"))
            term = _term(m.group("phrase"), phrase=True)
        else:
            bare = m.group("bare")
            if bare in ("OR", "AND", "NOT"):
                pending_not = pending_not or bare == "NOT"
                out.append(_Piece(bare, operator=True))
                continue
            if negated and _shouted(bare):  # "NOT NULL constraint failed": pasted text
                negated = False
                out[-1] = _Piece("NOT", operator=False)  # not an operator after all
            if bare.startswith("-") and not bare.startswith("--") and len(bare) > 1:
                negated, bare = True, bare[1:]  # "--no-verify" is a flag someone pasted
            term = _term(bare, phrase=False)
        pending_not = False
        out.append(_Piece(m.group(0), operator=False, term=term, negated=negated))
    return out


def _shouted(word: str) -> bool:
    """An all-capitals word (``NULL``, ``FOUND``): after ``NOT`` it is an error message or
    SQL someone pasted, not an instruction to exclude."""
    letters = [c for c in word if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters)


def parse_query(raw: str) -> ParsedQuery:
    """Parse any string; never raises. An empty result means "match nothing"."""
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    pending_or = False
    count = 0
    for piece in _pieces(raw):
        if count >= MAX_TERMS:
            break
        if piece.operator:
            if piece.typed == "OR":
                pending_or = bool(groups)
            continue
        term = piece.term
        if term is None:
            continue
        count += 1
        if piece.negated:
            excluded.append(term)
        elif pending_or:
            groups[-1].append(term)
        else:
            groups.append([term])
        pending_or = False
    return ParsedQuery(groups=tuple(tuple(g) for g in groups), excluded=tuple(excluded))


def meaning_text(raw: str) -> str:
    """What meaning (vector) search embeds for a raw query: the query as typed, without its
    excluded terms and the ``OR``/``AND``/``NOT`` operators — embedding ``-lock`` would
    look *for* locks. A query with neither is returned unchanged (its stop words and
    punctuation are part of how a sentence reads)."""
    pieces = _pieces(raw)
    if not any(p.operator or p.negated for p in pieces):
        return raw
    return " ".join(p.typed for p in pieces if not p.operator and not p.negated)


def drop_ubiquitous(
    query: ParsedQuery, fractions: Mapping[Term, float], threshold: float
) -> tuple[ParsedQuery, bool]:
    """Remove terms found in more than ``threshold`` of the documents (``fractions``: the
    share of documents holding each term; unknown terms are kept).

    Such a term neither narrows nor ranks a result (its IDF is about zero) but makes
    bm25 read its whole posting list. An OR group loses its ubiquitous members; a group
    left empty is dropped. Returns the reduced query and ``recency``: True when every
    group was ubiquitous, and ranking by relevance means nothing (the caller then orders
    the matches of the original query by recency)."""
    groups: list[tuple[Term, ...]] = []
    changed = False
    for group in query.groups:
        kept = tuple(t for t in group if fractions.get(t, 0.0) <= threshold)
        changed = changed or len(kept) != len(group)
        if kept:
            groups.append(kept)
    if not changed:
        return query, False
    if not groups:
        return query, True
    return ParsedQuery(groups=tuple(groups), excluded=query.excluded), False


def any_content_word(raw: str) -> ParsedQuery:
    """The query with any of its terms sufficing, stop words dropped (all of them kept
    when nothing else is left): how recall reads a question against short memory items."""
    parsed = parse_query(raw)
    terms = tuple(t for g in parsed.groups for t in g)
    content = tuple(t for t in terms if not (len(t.words) == 1 and t.words[0] in STOPWORDS))
    return ParsedQuery(groups=((content or terms),) if terms else (), excluded=parsed.excluded)


def _fts5_term(term: Term) -> str:
    body = '"' + " ".join(term.words).replace('"', '""') + '"'
    return body + " *" if term.prefix else body


def _fts5_any(terms: tuple[Term, ...]) -> str:
    return "(" + " OR ".join(_fts5_term(t) for t in terms) + ")"


def to_fts5(query: ParsedQuery, column: str | None = None) -> str | None:
    """FTS5 MATCH text for ``query`` (None when nothing can match). ``column`` restricts
    the match to one indexed column."""
    if query.empty:
        return None
    expr = "(" + " AND ".join(_fts5_any(g) for g in query.groups) + ")"
    if query.excluded:
        expr = f"{expr} NOT {_fts5_any(query.excluded)}"
    if column is not None:
        expr = "{" + column + "} : (" + expr + ")"
    return expr


MARK_START = "\x02"
MARK_END = "\x03"
SNIPPET_CHARS = 200  # a store snippet's width: about the 24 words of FTS5's snippet()
# a CJK run, or a run of other letters and digits (``用SQLite`` is two words to the index)
_SPLIT_ONLY = "\x1c\x1d\x1e\x1f"  # white space to str.split, not to the regex's \s
# what may lie between two characters of a CJK run the index matches: no letter or digit
_BETWEEN_CJK = r"[^\p{L}\p{N}]*"
# a word begins after anything but a letter or digit, or after a CJK character
_WORD_START = f"(?:(?<![\\p{{L}}\\p{{N}}])|(?<=[{CJK_CHARS}]))"


@cache
def _regex() -> tuple[regex.Pattern[str], regex.Pattern[str], regex.Pattern[str]]:
    """The snippet patterns (a CJK run or a run of other letters and digits — ``用SQLite``
    is two words to the index —, white space, one CJK character), compiled on first use:
    the ``regex`` package and its compiles cost a search that makes no snippet ~12 ms."""
    import regex

    word = regex.compile(f"[{CJK_CHARS}]+|(?:(?![{CJK_CHARS}])[\\p{{L}}\\p{{N}}])+")
    return word, regex.compile(r"\s+"), regex.compile(f"[{CJK_CHARS}]")


def query_words(query: str) -> list[str]:
    """Lower-cased words of a query, in order, without duplicates (length ≥ 2 or CJK); a
    CJK run is a word apart from the letters next to it, as the index segments it."""
    seen: list[str] = []
    for word in _regex()[0].findall(query.lower()):
        if (len(word) >= 2 or not word.isascii()) and word not in seen:
            seen.append(word)
    return seen


def marked_words(query: ParsedQuery) -> str:
    """The words a store's snippet marks for a parsed query: its terms as typed (a CJK run
    whole again); never an excluded term, which the hit does not hold."""
    return " ".join(unsegment_cjk(term.text) for group in query.groups for term in group)


def make_snippet(text: str, query: str, width: int = 240) -> str:
    """``width`` characters of ``text`` around the first query word, query words marked
    (case and accents aside, as the index matches: ``cafe`` marks ``Café``)."""
    flat = _flat(text.replace(MARK_START, "").replace(MARK_END, ""))
    words = query_words(query)
    words = [w for w in words if w not in STOPWORDS] or words  # "to" is no reason to mark
    if not words or not flat:
        return _cut(flat, 0, width)
    import regex

    pattern = regex.compile(
        "|".join(_at_word_start(w) for w in sorted(words, key=len, reverse=True)),
        regex.IGNORECASE,
    )
    first = pattern.search(fold_accents(flat))  # folding keeps every character's place
    start = 0 if first is None else max(0, first.start() - width // 3)
    window = _cut(flat, start, width)
    out: list[str] = []
    done = 0
    for match in pattern.finditer(fold_accents(window)):
        out += [window[done : match.start()], MARK_START, window[match.start() : match.end()]]
        out.append(MARK_END)
        done = match.end()
    return "".join(out) + window[done:]


def _flat(text: str) -> str:
    """``text`` with each run of white space one space, none at either end. ``str.split``
    does it several times faster than the regex over a whole exchange; it also splits at
    ``\\x1c``–``\\x1f``, which the regex (Unicode's White_Space) keeps, so text holding
    one of those takes the regex."""
    if any(c in text for c in _SPLIT_ONLY):
        return _regex()[1].sub(" ", text).strip()
    return " ".join(text.split())


def _at_word_start(word: str) -> str:
    """A query word as a pattern matching where the index finds it: a CJK run anywhere
    (CJK has no word boundaries to begin at), its characters apart or not (``数据库锁定``
    marks ``数据库 锁定``); another word where a word begins (``test`` marks ``tests``, not
    the middle of ``latest``)."""
    import regex

    folded = fold_accents(word)
    if _regex()[2].match(word):
        return _BETWEEN_CJK.join(regex.escape(c) for c in folded)
    return _WORD_START + regex.escape(folded)


def _cut(flat: str, start: int, width: int) -> str:
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start : start + width]
    if start + width < len(flat):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > width // 2 else piece) + " …"
    return ("… " if start > 0 else "") + piece
