"""No adapter filters rows by user in Python: the owner belongs in the query.

Every Python module of the adapters (``cli/``, ``server/``, ``mcp/``) is parsed, and every
comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) anywhere in it — an ``if``, a
comprehension, a lambda given to ``filter`` or ``sorted`` — is read: one side may not be
an owner field of a value (``x.user``, ``x.owner``, ``x.user_name``, ``x["owner"]``,
``x.get("user")``, ``getattr(x, "owner")``). The only owner an adapter may compare is the
caller's own, as the edge decided it: :data:`EDGE`. The page's scripts are read for the
same fields compared with ``===`` / ``!==``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "memoir"
ADAPTERS = ("cli", "server", "mcp")
FIELDS = frozenset({"user", "owner", "user_name", "owner_name"})
# the caller as the edge decided it: the MCP server's user, the CLI's --user, the request's
EDGE = frozenset({"home.user", "state.user", "request.state.user"})
_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _owner_field(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in FIELDS and ast.unparse(node) not in EDGE
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in FIELDS
    if isinstance(node, ast.Call):
        name = node.func
        named = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if isinstance(name, ast.Attribute) and name.attr == "get":
            return bool(named) and named[0] in FIELDS
        if isinstance(name, ast.Name) and name.id == "getattr":
            return len(named) >= 1 and named[0] in FIELDS
    return False


def owner_comparisons(source: str) -> list[str]:
    """Each comparison in ``source`` with an owner field of a value on one side. Pure."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, _OPS) for op in node.ops):
            continue
        if any(_owner_field(side) for side in (node.left, *node.comparators)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("mine = [i for i in rows if i.session.user == user]", True),
        ("mine = [i for i in rows if user != i.owner]", True),
        ("keep = filter(lambda r: r.user_name in allowed, rows)", True),
        ("if row['owner'] == who: pass", True),
        ("if hit.get('user') is not None and hit.get('user') == me: pass", True),
        ("if getattr(job, 'owner') != name: pass", True),
        ("if not (found.user == caller): raise NotFound()", True),
        ("if home.user == LOCAL_USER: pass", False),  # the caller, as the edge decided it
        ("who = state.user if given is None else given", False),
        ("if request.state.user: pass", False),
        ("print_json(job.to_json() | {'user': job.user})", False),  # shown, not filtered
        ("rows = store.items.find(owner=user)", False),  # the owner handed to the query
    ],
)
def test_the_guard_sees_what_it_guards_against(source: str, flagged: bool) -> None:
    assert bool(owner_comparisons(source)) is flagged


def test_no_adapter_filters_rows_by_user_in_python() -> None:
    modules = [p for folder in ADAPTERS for p in sorted((SRC / folder).rglob("*.py"))]
    assert len(modules) >= 20  # the adapters were found and read (22 modules after #36)
    offending = [
        f"{path.relative_to(SRC)}:{hit}"
        for path in modules
        for hit in owner_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert offending == []


_JS_COMPARE = re.compile(
    r"\.(user|owner|user_name)\s*[!=]==?|[!=]==?\s*\w+(\.\w+)*\.(user|owner)\b"
)


def test_the_page_filters_no_rows_by_user() -> None:
    scripts = sorted((SRC / "server" / "web" / "static").rglob("*.js"))
    assert len(scripts) > 5
    offending = [
        f"{path.name}:{n}: {line.strip()}"
        for path in scripts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _JS_COMPARE.search(line)
    ]
    assert offending == []
    assert _JS_COMPARE.search("items.filter((i) => i.owner === me)")
    assert _JS_COMPARE.search("if (me !== hit.user) return;")
    assert not _JS_COMPARE.search("announce(`Signed in as ${answer.data.user}`);")
