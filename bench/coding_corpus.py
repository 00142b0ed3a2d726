#!/usr/bin/env python3
"""A realistic Claude Code corpus with 40 planted known items, for bench/coding_bench.py.

Usage: python3 bench/coding_corpus.py OUTDIR
Writes OUTDIR/<project-folder>/<session-uuid>.jsonl and OUTDIR/../known.json (each known
item: id, kind exact|paraphrase, session, fingerprint of the planted user prompt, query).
Seeded: the same corpus every run. Written during a search-quality audit (a helper planted
the items and wrote the queries, half as exact tokens, half paraphrased, before any fix).
"""

import json
import random
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

random.seed(7)
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "coding-corpus")
KNOWN_PATH = OUT.parent / "known.json"

PROJECTS = {
    "billing": "/home/dev/code/billing-api",
    "dash": "/home/dev/code/web-dashboard",
    "infra": "/home/dev/code/infra-tools",
    "ml": "/home/dev/code/ml-pipeline",
    "docs": "/home/dev/code/docs-site",
}


def folder(p):
    return PROJECTS[p].replace("/", "-")


G = "\x1b[32m"
R = "\x1b[31m"
B = "\x1b[1m"
Y = "\x1b[33m"
X = "\x1b[0m"


def pytest_ok(n, files):
    lines = [
        f"{B}============================= test session starts =============================={X}",
        "platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0",
        "rootdir: /home/dev/code/billing-api",
        "configfile: pyproject.toml",
        "plugins: anyio-4.3.0, cov-5.0.0, asyncio-0.23.6",
        f"collected {n} items",
        "",
    ]
    for f in files:
        lines.append(
            f"{f} {G}........................{X}{G}                              [ 40%]{X}"
        )
    lines.append(
        f"{G}============================== {n} passed in 3.41s =============================={X}"
    )
    return "\n".join(lines)


def traceback(frames, last):
    out = ["Traceback (most recent call last):"]
    for f, ln, fn, code in frames:
        out.append(f'  File "{f}", line {ln}, in {fn}')
        out.append(f"    {code}")
    out.append(last)
    return "\n".join(out)


STD_FRAMES = [
    (
        "/home/dev/code/billing-api/.venv/lib/python3.12/site-packages/uvicorn/main.py",
        418,
        "main",
        "run(app, **kwargs)",
    ),
    (
        "/home/dev/code/billing-api/.venv/lib/python3.12/site-packages/uvicorn/server.py",
        68,
        "serve",
        "config.load()",
    ),
    (
        "/home/dev/code/billing-api/.venv/lib/python3.12/site-packages/uvicorn/config.py",
        467,
        "load",
        "self.loaded_app = import_from_string(self.app)",
    ),
    (
        "/home/dev/code/billing-api/src/billing/app.py",
        3,
        "<module>",
        "from billing.logging import configure_logging",
    ),
    ("/home/dev/code/billing-api/src/billing/logging.py", 1, "<module>", "import structlog"),
]


# ---------------------------------------------------------------- transcript writer
class Session:
    def __init__(self, proj, start, branch="main"):
        self.proj = proj
        self.sid = str(uuid.UUID(int=random.getrandbits(128)))
        self.t = start
        self.recs = []
        self.parent = None
        self.branch = branch

    def _base(self, typ):
        u = str(uuid.UUID(int=random.getrandbits(128)))
        rec = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": PROJECTS[self.proj],
            "sessionId": self.sid,
            "version": "1.0.119",
            "gitBranch": self.branch,
            "type": typ,
            "uuid": u,
            "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.")
            + f"{self.t.microsecond // 1000:03d}Z",
        }
        self.parent = u
        self.t += timedelta(seconds=random.randint(5, 90))
        return rec

    def user(self, text):
        r = self._base("user")
        r["message"] = {"role": "user", "content": text}
        self.recs.append(r)

    def assistant_blocks(self, blocks):
        mid = "msg_" + uuid.UUID(int=random.getrandbits(128)).hex[:24]
        for b in blocks:
            r = self._base("assistant")
            r["message"] = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-20250514",
                "content": [b],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 4, "output_tokens": 120},
            }
            r["requestId"] = "req_" + uuid.UUID(int=random.getrandbits(128)).hex[:20]
            self.recs.append(r)

    def say(self, text):
        self.assistant_blocks([{"type": "text", "text": text}])

    def think(self, text):
        self.assistant_blocks([{"type": "thinking", "thinking": text, "signature": "sig"}])

    def tool(self, name, inp, result, is_error=False):
        tid = "toolu_" + uuid.UUID(int=random.getrandbits(128)).hex[:22]
        self.assistant_blocks([{"type": "tool_use", "id": tid, "name": name, "input": inp}])
        r = self._base("user")
        r["message"] = {
            "role": "user",
            "content": [
                {"tool_use_id": tid, "type": "tool_result", "content": result, "is_error": is_error}
            ],
        }
        r["toolUseResult"] = {
            "stdout": result if name == "Bash" else "",
            "stderr": "",
            "interrupted": False,
        }
        self.recs.append(r)

    def gap(self, minutes):
        self.t += timedelta(minutes=minutes)

    def write(self):
        d = OUT / folder(self.proj)
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{self.sid}.jsonl", "w") as f:
            f.write(json.dumps({"type": "summary", "summary": "", "leafUuid": None}) + "\n")
            for r in self.recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- filler exchanges
def bash(s, cmd, out, desc="Run command"):
    s.tool("Bash", {"command": cmd, "description": desc}, out)


def read(s, path, content):
    numbered = "\n".join(f"{i + 1:>6}→{l}" for i, l in enumerate(content.splitlines()))
    s.tool("Read", {"file_path": path}, numbered)


def edit(s, path, old, new):
    s.tool(
        "Edit",
        {"file_path": path, "old_string": old, "new_string": new},
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:",
    )


def grep(s, pattern, path, out):
    s.tool("Grep", {"pattern": pattern, "path": path, "output_mode": "content", "-n": True}, out)


PY_FILE = """from decimal import Decimal
from sqlalchemy import Column, Integer, String, DateTime, ForeignKey
from sqlalchemy.orm import relationship
from billing.db import Base


class Invoice(Base):
    __tablename__ = "invoices"
    id = Column(Integer, primary_key=True)
    tenant_id = Column(Integer, ForeignKey("tenants.id"), nullable=False)
    number = Column(String(32), unique=True)
    created_at = Column(DateTime, nullable=False)
    lines = relationship("InvoiceLine", back_populates="invoice")
"""
TS_FILE = """import { useEffect, useState } from "react";
import { api } from "../lib/api";

export function OrdersTable({ tenantId }: { tenantId: string }) {
  const [rows, setRows] = useState<Order[]>([]);
  useEffect(() => {
    api.get(`/tenants/${tenantId}/orders`).then((r) => setRows(r.data));
  }, [tenantId]);
  return <Table rows={rows} columns={orderColumns} />;
}
"""
GO_FILE = """package hub

import (
\t"sync"
\t"github.com/gorilla/websocket"
)

type Hub struct {
\tmu      sync.Mutex
\tclients map[*Client]bool
\tbroadcast chan []byte
}
"""


def filler(s, proj):
    """One ordinary exchange for project ``proj``."""
    k = random.randrange(8)
    if proj == "billing":
        if k == 0:
            s.user("run the test suite")
            bash(
                s,
                "uv run pytest -q",
                pytest_ok(
                    random.randint(80, 140),
                    ["tests/test_api.py", "tests/test_tax.py", "tests/test_models.py"],
                ),
                "Run tests",
            )
            s.say("All tests pass.")
        elif k == 1:
            s.user("show me the Invoice model")
            read(s, "/home/dev/code/billing-api/src/billing/models.py", PY_FILE)
            s.say(
                "The `Invoice` model has `tenant_id`, `number` and `created_at`, with a relationship to `InvoiceLine`."
            )
        elif k == 2:
            s.user("add a created_at index to the migration")
            edit(
                s,
                "/home/dev/code/billing-api/migrations/versions/0042_invoice_idx.py",
                "def upgrade():\n    pass",
                "def upgrade():\n    op.create_index('ix_invoices_created_at', 'invoices', ['created_at'])",
            )
            s.say("Added `ix_invoices_created_at` in the upgrade step of the Alembic migration.")
        elif k == 3:
            s.user("where do we compute tax?")
            grep(
                s,
                "def compute_tax",
                "src",
                "src/billing/tax.py:14:def compute_tax(amount: Decimal, region: str) -> Decimal:\nsrc/billing/tax.py:41:def compute_tax_lines(invoice):",
            )
            s.say(
                "Tax is computed in `src/billing/tax.py` by `compute_tax` and `compute_tax_lines`."
            )
        elif k == 4:
            s.user("start the dev server")
            bash(
                s,
                "uv run uvicorn billing.app:app --reload",
                "INFO:     Will watch for changes in these directories: ['/home/dev/code/billing-api']\nINFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\nINFO:     Started reloader process [48211] using WatchFiles\nINFO:     Application startup complete.",
            )
            s.say("The server is running on http://127.0.0.1:8000.")
        elif k == 5:
            s.user("git status please")
            bash(
                s,
                "git status --short && git log --oneline -3",
                " M src/billing/api/invoices.py\n M tests/test_api.py\n?? scratch.sql\n9f2c1ab fix: invoice numbering race\n1d0e77f feat: credit notes\n55ab3c2 chore: bump ruff",
            )
            s.say(
                "Two modified files and an untracked `scratch.sql`. Last commit is the invoice numbering fix."
            )
        elif k == 6:
            s.user("the migration fails, can you look")
            bash(
                s,
                "uv run alembic upgrade head",
                traceback(
                    STD_FRAMES[:2],
                    'sqlalchemy.exc.ProgrammingError: (psycopg.errors.UndefinedTable) relation "credit_notes" does not exist',
                ),
            )
            s.say(
                "The `credit_notes` table does not exist yet: migration 0041 must run before 0042. I reordered the `down_revision`."
            )
        else:
            s.user("lint the code")
            bash(
                s,
                "uv run ruff check src tests",
                "src/billing/api/invoices.py:88:5: F841 Local variable `resp` is assigned to but never used\nFound 1 error.\n[*] 1 fixable with the `--fix` option.",
            )
            s.say("One unused variable in `invoices.py`; removed it.")
    elif proj == "dash":
        if k in (0, 1):
            s.user("run the frontend tests")
            bash(
                s,
                "npm test -- --run",
                f" {G}✓{X} src/components/OrdersTable.test.tsx (4 tests) 38ms\n {G}✓{X} src/hooks/useTenant.test.ts (2 tests) 11ms\n\n Test Files  2 passed (2)\n      Tests  6 passed (6)\n   Duration  1.42s",
            )
            s.say("Vitest: 6 tests pass.")
        elif k == 2:
            s.user("open OrdersTable")
            read(s, "/home/dev/code/web-dashboard/src/components/OrdersTable.tsx", TS_FILE)
            s.say(
                "`OrdersTable` fetches `/tenants/:id/orders` in a `useEffect` and renders a `Table`."
            )
        elif k == 3:
            s.user("type-check the project")
            bash(s, "npx tsc --noEmit", "")
            s.say("No type errors.")
        elif k == 4:
            s.user("make the table columns sortable")
            edit(
                s,
                "/home/dev/code/web-dashboard/src/components/OrdersTable.tsx",
                "<Table rows={rows} columns={orderColumns} />",
                '<Table rows={rows} columns={orderColumns} sortable defaultSort="createdAt" />',
            )
            s.say("Columns are now sortable, defaulting to `createdAt`.")
        elif k == 5:
            s.user("find where we call the orders api")
            grep(
                s,
                "api.get\\(`/tenants",
                "src",
                "src/components/OrdersTable.tsx:7:    api.get(`/tenants/${tenantId}/orders`).then((r) => setRows(r.data));\nsrc/pages/Invoices.tsx:22:  const { data } = useQuery(['invoices', tenantId], () => api.get(`/tenants/${tenantId}/invoices`));",
            )
            s.say("Two call sites: `OrdersTable.tsx` and `pages/Invoices.tsx`.")
        else:
            s.user("build it")
            bash(
                s,
                "npm run build",
                "vite v5.2.11 building for production...\n✓ 412 modules transformed.\ndist/index.html                   0.46 kB │ gzip:  0.30 kB\ndist/assets/index-4f3a1c2b.js   312.77 kB │ gzip: 98.12 kB\n✓ built in 4.81s",
            )
            s.say("Production build done: 313 kB JS (98 kB gzipped).")
    elif proj == "infra":
        if k in (0, 1):
            s.user("terraform plan for staging")
            bash(
                s,
                "cd envs/staging && terraform plan -no-color",
                "Refreshing state...\naws_s3_bucket.logs: Refreshing state... [id=acme-staging-logs]\n\nNo changes. Your infrastructure matches the configuration.",
            )
            s.say("No changes in staging.")
        elif k == 2:
            s.user("run the go tests")
            bash(
                s,
                "go test ./... -race",
                "ok  \tgithub.com/acme/infra-tools/hub\t0.412s\nok  \tgithub.com/acme/infra-tools/deploy\t1.093s\n?   \tgithub.com/acme/infra-tools/cmd/ctl\t[no test files]",
            )
            s.say("All Go packages pass with the race detector.")
        elif k == 3:
            s.user("show the hub struct")
            read(s, "/home/dev/code/infra-tools/hub/hub.go", GO_FILE)
            s.say("`Hub` holds a mutex, the client set and a broadcast channel.")
        elif k == 4:
            s.user("check the pods in staging")
            bash(
                s,
                "kubectl -n staging get pods",
                "NAME                          READY   STATUS    RESTARTS   AGE\napi-7d9f8c6b5-2xkqp           1/1     Running   0          3d\nworker-5f6d7c8b9-8hjkl        1/1     Running   1          3d\nredis-0                       1/1     Running   0          12d",
            )
            s.say("All staging pods are running.")
        elif k == 5:
            s.user("lint the go code")
            bash(
                s,
                "golangci-lint run ./...",
                "hub/client.go:54:2: ineffectual assignment to err (ineffassign)\n\terr = c.conn.SetReadDeadline(time.Now().Add(pongWait))\n\t^",
            )
            s.say("Fixed the ineffectual assignment in `client.go`.")
        else:
            s.user("bump the helm chart version")
            edit(
                s,
                "/home/dev/code/infra-tools/charts/api/Chart.yaml",
                "version: 0.8.3",
                "version: 0.8.4",
            )
            s.say("Chart version bumped to 0.8.4.")
    elif proj == "ml":
        if k in (0, 1):
            s.user("kick off training on the small config")
            bash(
                s,
                "python train.py --config configs/small.yaml",
                "epoch 1 | loss 2.3114 | val_loss 2.1987 | lr 3.0e-04\nepoch 2 | loss 1.8420 | val_loss 1.9011 | lr 3.0e-04\nepoch 3 | loss 1.6233 | val_loss 1.7742 | lr 2.7e-04\nsaved checkpoint to runs/small/ckpt_3.pt",
            )
            s.say("Training runs fine; val loss 1.77 after 3 epochs.")
        elif k == 2:
            s.user("look at the dataloader")
            read(
                s,
                "/home/dev/code/ml-pipeline/src/pipeline/data.py",
                "import pandas as pd\nimport torch\nfrom torch.utils.data import Dataset\n\nclass EventsDataset(Dataset):\n    def __init__(self, path):\n        self.df = pd.read_parquet(path)\n",
            )
            s.say("`EventsDataset` reads a parquet file into pandas.")
        elif k == 3:
            s.user("run the pipeline tests")
            bash(
                s,
                "pytest tests -q",
                pytest_ok(42, ["tests/test_features.py", "tests/test_data.py"]),
            )
            s.say("42 passed.")
        elif k == 4:
            s.user("profile the feature step")
            bash(
                s,
                "python -m cProfile -s cumtime -m pipeline.features | head -8",
                "         1843021 function calls in 12.881 seconds\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n        1    0.002    0.002   12.881   12.881 features.py:1(<module>)\n      240    6.114    0.025    9.310    0.039 frame.py:4112(apply)",
            )
            s.say("Most time goes to `DataFrame.apply`; vectorising it should help.")
        else:
            s.user("vectorise the apply in features.py")
            edit(
                s,
                "/home/dev/code/ml-pipeline/src/pipeline/features.py",
                "df['ratio'] = df.apply(lambda r: r.a / r.b, axis=1)",
                "df['ratio'] = df['a'] / df['b']",
            )
            s.say("Replaced the row-wise `apply` with a column division.")
    else:  # docs
        if k in (0, 1, 2):
            s.user("build the docs site")
            bash(
                s,
                "npm run docs:build",
                "vitepress v1.1.4\n\n✓ building client + server bundles...\n✓ rendering pages...\nbuild complete in 7.42s.",
            )
            s.say("Docs built.")
        elif k == 3:
            s.user("fix the broken link on the install page")
            edit(
                s,
                "/home/dev/code/docs-site/guide/install.md",
                "[CLI](/cli/)",
                "[CLI](/reference/cli)",
            )
            s.say("Fixed the CLI link.")
        elif k == 4:
            s.user("check links")
            bash(
                s,
                "npx linkinator dist --recurse",
                "[200] /guide/install\n[200] /reference/cli\n[404] /blog/2024-roadmap\nERROR: Detected 1 broken links.",
            )
            s.say("One broken link: `/blog/2024-roadmap`.")
        else:
            s.user("add a page for the changelog")
            edit(
                s,
                "/home/dev/code/docs-site/.vitepress/config.ts",
                "sidebar: [",
                "sidebar: [\n  { text: 'Changelog', link: '/changelog' },",
            )
            s.say("Added a Changelog entry to the sidebar.")


# ---------------------------------------------------------------- planted items
KNOWN = []


def plant(kid, kind, query, fp, args=None, note=""):
    KNOWN.append(
        {
            "id": kid,
            "kind": kind,
            "query": query,
            "fingerprint": fp,
            "args": args or [],
            "note": note,
        }
    )


def P(s, kid, kind, query, prompt, body, args=None, note=""):
    """Plant: ``prompt`` opens the exchange, ``body(s)`` writes the rest."""
    s.user(prompt)
    body(s)
    plant(kid, kind, query, prompt[:60], args, note)
    KNOWN[-1]["session"] = s.sid


PLANTS = []  # (project, date, func(session))


def item(proj, date):
    def deco(fn):
        PLANTS.append((proj, date, fn))
        return fn

    return deco


# --- exact-token items
@item("billing", "2025-01-14")
def e1(s):
    long_tb = traceback(STD_FRAMES, "ModuleNotFoundError: No module named 'structlog'")
    P(
        s,
        "E1",
        "exact",
        "ModuleNotFoundError structlog",
        "the app won't boot after I pulled main",
        lambda s: (
            bash(s, "uv run uvicorn billing.app:app", long_tb),
            s.say(
                "A dependency is missing from the lock file; I added it with `uv add` and the server starts now."
            ),
        ),
        note="error is the last line of a ~900-char traceback (tool result tail)",
    )


@item("billing", "2025-01-20")
def e2(s):
    P(
        s,
        "E2",
        "exact",
        "ECONNREFUSED 127.0.0.1:5432",
        "integration tests can't reach the database",
        lambda s: (
            bash(
                s,
                "npm run test:integration",
                "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1595:16)",
            ),
            s.say("Postgres isn't running locally. Start it with `docker compose up -d db`."),
        ),
        note="short tool result, head",
    )


@item("billing", "2025-02-03")
def e3(s):
    P(
        s,
        "E3",
        "exact",
        "reconcileLedgerEntries",
        "the nightly job double counts refunds",
        lambda s: s.say(
            "The bug is in `reconcileLedgerEntries`: refunds are matched by amount only, so two refunds of the same amount each match both ledger rows. I now match on `refund_id`."
        ),
        note="camelCase identifier in assistant text",
    )


@item("billing", "2025-02-11")
def e4(s):
    P(
        s,
        "E4",
        "exact",
        "proration.py",
        "mid-cycle plan upgrades charge the full month",
        lambda s: (
            edit(
                s,
                "/home/dev/code/billing-api/src/billing/proration.py",
                "return plan.price",
                "return plan.price * remaining_days / period_days",
            ),
            s.say("Upgrades are now prorated by remaining days."),
        ),
        note="file name only in Edit tool input",
    )


@item("billing", "2025-02-19")
def e5(s):
    P(
        s,
        "E5",
        "exact",
        "git commit --no-verify",
        "the pre-commit hook is broken on my machine, just do git commit --no-verify for now",
        lambda s: (
            bash(
                s,
                "git commit --no-verify -m 'fix: credit note totals'",
                "[main 3c1d2e9] fix: credit note totals\n 2 files changed, 14 insertions(+), 3 deletions(-)",
            ),
            s.say("Committed, skipping the hook."),
        ),
        note="flag with leading dashes",
    )


@item("billing", "2025-03-04")
def e6(s):
    P(
        s,
        "E6",
        "exact",
        "NOT NULL constraint failed: invoices.tenant_id",
        "creating a draft invoice from the admin blows up",
        lambda s: (
            bash(
                s,
                "uv run pytest tests/test_admin.py -q -x",
                "E   sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) NOT NULL constraint failed: invoices.tenant_id\n1 failed in 0.42s",
            ),
            s.say(
                "The admin form never sets the tenant; I default it from the logged-in staff user's tenant."
            ),
        ),
        note="pasted error message containing NOT",
    )


@item("billing", "2025-03-12")
def e7(s):
    P(
        s,
        "E7",
        "exact",
        "max_retry_backoff_ms",
        "webhook retries hammer the partner's endpoint",
        lambda s: s.say(
            "I added a `max_retry_backoff_ms` setting (default 60000) and exponential backoff with jitter, so retries spread out instead of hitting them every second."
        ),
        note="snake_case setting in assistant text",
    )


@item("dash", "2025-01-09")
def e8(s):
    P(
        s,
        "E8",
        "exact",
        "feature-flag-service",
        "wire the dashboard to the feature-flag-service so we can hide the beta reports",
        lambda s: s.say("Done: flags are fetched once at startup and cached in context."),
        note="kebab-case name in user prompt",
    )


@item("billing", "2025-03-20")
def e9(s):
    out = pytest_ok(
        131, ["tests/test_api.py", "tests/test_invoice.py", "tests/test_models.py"]
    ).replace(
        f"{G}============================== 131 passed",
        f"{R}{B}FAILED{X} tests/test_invoice.py::{B}test_rounding_half_even{X} - AssertionError: assert Decimal('10.00') == Decimal('10.01')\n{R}========================= 1 failed, 130 passed",
    )
    P(
        s,
        "E9",
        "exact",
        "test_rounding_half_even",
        "CI is red on the invoice tests",
        lambda s: (
            bash(s, "uv run pytest -q", out),
            s.say(
                "Rounding uses ROUND_HALF_UP; the spec wants banker's rounding, so I switched the quantize call."
            ),
        ),
        note="failing test name at end of ANSI-coloured pytest output",
    )


@item("billing", "2025-04-02")
def e10(s):
    P(
        s,
        "E10",
        "exact",
        "pydantic 2.7.1",
        "validation errors changed shape after the upgrade",
        lambda s: s.say(
            "pydantic 2.7.1 changed `ValidationError.errors()` to include the `url` key; our snapshot tests compare the whole dict. I pinned the comparison to `loc`, `msg` and `type`."
        ),
        note="version number in assistant text",
    )


@item("billing", "2025-04-15")
def e11(s):
    P(
        s,
        "E11",
        "exact",
        "api.stripe.com/v1/payment_intents",
        "check what stripe returns for a declined card",
        lambda s: (
            bash(
                s,
                "curl -s https://api.stripe.com/v1/payment_intents -u $STRIPE_TEST_KEY: -d amount=2000 -d currency=eur -d payment_method=pm_card_chargeDeclined -d confirm=true",
                '{"error": {"code": "card_declined", "decline_code": "generic_decline", "message": "Your card was declined."}}',
            ),
            s.say("Stripe answers with `card_declined` / `generic_decline`."),
        ),
        note="URL in Bash command",
    )


@item("infra", "2025-02-06")
def e12(s):
    def body(s):
        read(s, "/home/dev/code/infra-tools/hub/hub.go", GO_FILE)
        grep(s, "func (h \\*Hub) Run", "hub", "hub/hub.go:31:func (h *Hub) Run() {")
        bash(
            s,
            "go test ./hub -run TestBroadcast -v",
            "=== RUN   TestBroadcast\n--- FAIL: TestBroadcast (0.00s)\npanic: runtime error: invalid memory address or nil pointer dereference [recovered]\n\tpanic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5a1f3e]",
        )
        s.say(
            "`Run` used the `clients` map before `NewHub` initialised it; I construct it in `NewHub` now."
        )

    P(
        s,
        "E12",
        "exact",
        "nil pointer dereference",
        "TestBroadcast crashes",
        body,
        note="error in the 3rd tool result, after a Read and a Grep",
    )


@item("infra", "2025-02-24")
def e13(s):
    out = (
        "Acquiring state lock. This may take a few moments...\n"
        + "\n".join(
            f"module.vpc.aws_subnet.private[{i}]: Refreshing state... [id=subnet-0{i}a1b2c3d4e5f6]"
            for i in range(6)
        )
        + "\n\nError: Error acquiring the state lock\n\nError message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID:        9db590f1-b6fe-c5f2-2678-8804f089deba\n  Path:      acme-tfstate/prod/terraform.tfstate\n  Who:       ci@runner-12"
    )
    P(
        s,
        "E13",
        "exact",
        "Error acquiring the state lock",
        "prod apply is stuck",
        lambda s: (
            bash(s, "cd envs/prod && terraform apply -auto-approve", out),
            s.say(
                "A CI run still holds the lock. After confirming the run was dead I released it with `terraform force-unlock 9db590f1-b6fe-c5f2-2678-8804f089deba`."
            ),
        ),
        note="terraform error after 6 refresh lines (tool result tail)",
    )


@item("dash", "2025-02-13")
def e14(s):
    P(
        s,
        "E14",
        "exact",
        "TS2345",
        "tsc fails on the filters page",
        lambda s: (
            bash(
                s,
                "npx tsc --noEmit",
                "src/pages/Filters.tsx(41,23): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
            ),
            s.say("`pageSize` comes from the URL as a string; I parse it with `Number()`."),
        ),
        note="TS error code in tool result head",
    )


@item("billing", "2025-04-22")
def e15(s):
    P(
        s,
        "E15",
        "exact",
        "MAX_EXPORT_ROWS",
        "exports over a quarter million rows time out, cap them",
        lambda s: (
            edit(
                s,
                "/home/dev/code/billing-api/src/billing/settings.py",
                "DEFAULT_PAGE_SIZE = 50\n",
                "DEFAULT_PAGE_SIZE = 50\nMAX_EXPORT_ROWS = 250000\n",
            ),
            s.say("Capped exports; above the cap the API answers 422 and suggests a date range."),
        ),
        note="constant at the start of a line inside an Edit new_string (JSON-escaped \\n)",
    )


@item("docs", "2025-03-06")
def e16(s):
    P(
        s,
        "E16",
        "exact",
        "メモリリーク",
        "本番にデプロイするとメモリリークが発生します。原因を調べてください。",
        lambda s: s.say(
            "The search index worker keeps every built page in a module-level list. I cleared it after each build."
        ),
        note="Japanese prompt",
    )


@item("docs", "2025-03-18")
def e17(s):
    P(
        s,
        "E17",
        "exact",
        "Überweisungen",
        "Die Gebührenberechnung für Überweisungen ins Ausland ist falsch, bitte prüfen.",
        lambda s: s.say(
            "The fee table used the domestic rate for SEPA transfers to non-euro countries; fixed the lookup."
        ),
        note="German prompt with umlaut",
    )


@item("infra", "2025-03-11")
def e18(s):
    P(
        s,
        "E18",
        "exact",
        "CrashLoopBackOff",
        "the worker pod keeps restarting in prod",
        lambda s: (
            bash(
                s,
                "kubectl -n prod get pods -l app=worker",
                "NAME                      READY   STATUS             RESTARTS      AGE\nworker-6c9d8f7b-x2lmn     0/1     CrashLoopBackOff   14 (2m ago)   49m",
            ),
            s.say(
                "Its liveness probe points at port 8080 but the worker listens on 9090; fixed the probe."
            ),
        ),
        note="k8s status in tool result",
    )


@item("dash", "2025-03-25")
def e19(s):
    P(
        s,
        "E19",
        "exact",
        "--legacy-peer-deps",
        "npm install fails with ERESOLVE after adding the chart library",
        lambda s: (
            bash(
                s,
                "npm ci --legacy-peer-deps",
                "added 1042 packages, and audited 1043 packages in 21s",
            ),
            s.say(
                "The chart library still declares react@17 as a peer; installing with the flag works until they release."
            ),
        ),
        note="a flag alone as the query",
    )


@item("billing", "2025-05-06")
def e20(s):
    P(
        s,
        "E20",
        "exact",
        "retry_after",
        "how long does the partner API want us to wait when it throttles us?",
        lambda s: (
            bash(
                s,
                "curl -si https://partner.example.com/v2/orders?page=1 | tail -1",
                '{"error": "rate_limited", "retry_after": 120, "limit": 600, "window": "1m"}',
            ),
            s.say("Two minutes, per the response body."),
        ),
        note="JSON key in a tool result",
    )


# --- paraphrase items
@item("billing", "2025-01-23")
def p1(s):
    P(
        s,
        "P1",
        "para",
        "background job processes killed out of memory",
        "the celery worker keeps dying silently after about an hour",
        lambda s: (
            bash(
                s,
                "dmesg | tail -3",
                "[88213.551] Out of memory: Killed process 31337 (celery) total-vm:4182212kB, anon-rss:3811204kB",
            ),
            s.say(
                "The kernel OOM killer ends it: RSS grows because each child keeps prefetched tasks. I set `worker_max_tasks_per_child=200` and `prefetch_multiplier=1`."
            ),
        ),
    )


@item("billing", "2025-02-07")
def p2(s):
    P(
        s,
        "P2",
        "para",
        "cursor based paging instead of LIMIT OFFSET",
        "the invoice list endpoint gets really slow on deep pages",
        lambda s: s.say(
            "Deep pages scan and discard every earlier row. I switched the endpoint to keyset pagination on `(created_at, id)`: the client passes the last seen pair and we query `WHERE (created_at, id) < (...)`."
        ),
    )


@item("dash", "2025-01-28")
def p3(s):
    P(
        s,
        "P3",
        "para",
        "persist selected tab across page refresh",
        "Can you make the dashboard remember which tab I had open after I reload?",
        lambda s: s.say(
            "I store the active tab key in `localStorage` under `dashboard.activeTab` and read it on mount."
        ),
    )


@item("billing", "2025-02-27")
def p4(s):
    P(
        s,
        "P4",
        "para",
        "reduce container image size",
        "our Docker image is 2.1GB, can we slim it down?",
        lambda s: (
            bash(
                s,
                "docker images billing-api",
                "REPOSITORY    TAG      IMAGE ID       CREATED        SIZE\nbilling-api   latest   a1b2c3d4e5f6   2 hours ago    2.1GB",
            ),
            s.say(
                "I moved to a multi-stage build on `python:3.12-slim` and only copy the venv; it's 240MB now."
            ),
        ),
    )


@item("billing", "2025-03-27")
def p5(s):
    P(
        s,
        "P5",
        "para",
        "test fails intermittently depending on time of day",
        "test_due_dates is flaky, passes most runs but failed twice last night",
        lambda s: s.say(
            "It builds 'today' and 'tomorrow' from two calls to `date.today()`; around midnight UTC they straddle the day boundary. I froze the clock with `freezegun` in that test."
        ),
    )


@item("infra", "2025-01-16")
def p6(s):
    P(
        s,
        "P6",
        "para",
        "throttle requests per IP at the reverse proxy",
        "one client is spamming the login endpoint, can nginx do something about it?",
        lambda s: (
            edit(
                s,
                "/home/dev/code/infra-tools/nginx/api.conf",
                "location /login {",
                "limit_req_zone $binary_remote_addr zone=login:10m rate=5r/m;\nlocation /login {\n    limit_req zone=login burst=3;",
            ),
            s.say(
                "Added a `limit_req_zone` keyed on the client address, 5 per minute with a burst of 3."
            ),
        ),
    )


@item("billing", "2025-01-30")
def p7(s):
    P(
        s,
        "P7",
        "para",
        "why we avoid floating point for currency amounts",
        "the totals are off by a cent sometimes",
        lambda s: s.say(
            "They are stored as floats, and 0.1 + 0.2 is not 0.3 in binary. We decided to store money as integer cents (`amount_cents BIGINT`) and only format at the edges."
        ),
    )


@item("dash", "2025-02-20")
def p8(s):
    P(
        s,
        "P8",
        "para",
        "browser refuses cross-origin request from frontend to api",
        "Access to fetch at 'http://localhost:8000/invoices' from origin 'http://localhost:5173' has been blocked by CORS policy: No 'Access-Control-Allow-Origin' header is present",
        lambda s: s.say(
            "The API has no CORS middleware. I added `CORSMiddleware` with `allow_origins=['http://localhost:5173']` for dev."
        ),
    )


@item("infra", "2025-03-03")
def p9(s):
    P(
        s,
        "P9",
        "para",
        "concurrent routines never terminating in socket server",
        "memory of the hub grows with every client that disconnects",
        lambda s: s.say(
            "Each client's `writePump` goroutine blocks forever on `send` after the socket closes, so they leak. I close the `send` channel in `unregister` so the loop exits."
        ),
    )


@item("ml", "2025-02-10")
def p10(s):
    P(
        s,
        "P10",
        "para",
        "exploding gradients model diverges",
        "loss goes to nan after epoch 3 on the large config",
        lambda s: (
            bash(
                s,
                "python train.py --config configs/large.yaml",
                "epoch 1 | loss 2.2811\nepoch 2 | loss 1.9050\nepoch 3 | loss nan\nRuntimeError: Function 'MulBackward0' returned nan values in its 0th output.",
            ),
            s.say(
                "Gradients blow up at the LR peak. Clipping the grad norm at 1.0 and lowering lr to 2e-4 keeps it stable."
            ),
        ),
    )


@item("billing", "2025-03-14")
def p11(s):
    P(
        s,
        "P11",
        "para",
        "spreadsheet shows garbled characters for non-ascii names",
        "customers say names like José and Zoë look broken when they open the CSV export in Excel",
        lambda s: s.say(
            "Excel assumes the legacy code page without a BOM. I write the export with `encoding='utf-8-sig'`."
        ),
    )


@item("billing", "2025-04-08")
def p12(s):
    P(
        s,
        "P12",
        "para",
        "reuse database connections pool",
        "Wie kann ich die Datenbankverbindungen zwischen den Requests wiederverwenden? Jeder Request öffnet eine neue.",
        lambda s: s.say(
            "Create one `psycopg_pool.ConnectionPool` at startup (min_size=2, max_size=10) and take connections from it per request; in prod pgbouncer sits in front."
        ),
    )


@item("docs", "2025-02-04")
def p13(s):
    P(
        s,
        "P13",
        "para",
        "build passes locally but fails in continuous integration",
        "Le build échoue sur la CI mais marche très bien en local, tu peux regarder ?",
        lambda s: s.say(
            "CI runs Node 18 and `vitepress` 1.1 needs Node 20 for `Array.prototype.toSorted`. I pinned Node 20 in `.nvmrc` and the workflow."
        ),
    )


@item("billing", "2025-04-24")
def p14(s):
    P(
        s,
        "P14",
        "para",
        "change token secret without invalidating sessions",
        "we need to rotate the JWT signing key but can't log everyone out",
        lambda s: s.say(
            "Sign new tokens with the new key and put a `kid` header in them; verification looks the key up by `kid` in a JWKS that keeps the old key until the longest token lifetime has passed."
        ),
    )


@item("infra", "2025-04-10")
def p15(s):
    P(
        s,
        "P15",
        "para",
        "stop infra tool from replacing the database",
        "terraform plan says it will destroy and recreate the RDS instance, why??",
        lambda s: (
            bash(
                s,
                "terraform plan -no-color | grep -A3 'must be replaced'",
                '  # aws_db_instance.main must be replaced\n-/+ resource "aws_db_instance" "main" {\n      ~ engine_version = "15.4" -> "15.5" # forces replacement',
            ),
            s.say(
                "The minor engine version bump forces replacement. I added `lifecycle { prevent_destroy = true, ignore_changes = [engine_version] }` and we'll upgrade through the console."
            ),
        ),
    )


@item("billing", "2025-03-28")
def p16(s):
    P(
        s,
        "P16",
        "para",
        "postgres upgrade in April 2025",
        "let's move the db from postgres 14 to 16 this weekend",
        lambda s: s.say(
            "Plan: `pg_upgrade --link` on a snapshot clone first, run the suite against it, then the same on prod in the maintenance window."
        ),
        note="query names April 2025; exchange is 28 March 2025 (within the documented one-week slack)",
    )


@item("billing", "2025-05-13")
def p17(s):
    P(
        s,
        "P17",
        "para",
        "speed up the report query with an index",
        "the orders report takes 40 seconds to load",
        lambda s: (
            bash(
                s,
                "psql $DATABASE_URL -c 'EXPLAIN ANALYZE SELECT ...'",
                "Seq Scan on orders  (cost=0.00..412331.00 rows=1203 width=88) (actual time=0.041..39811.2 rows=1187 loops=1)\n  Filter: ((tenant_id = 42) AND (created_at >= '2025-04-01'))",
            ),
            s.say(
                "A sequential scan over all orders. A composite index on `(tenant_id, created_at)` brings it to 80 ms."
            ),
        ),
    )


@item("billing", "2025-04-29")
def p18(s):
    s.user("the partner asked about the webhook signature thing")
    s.say("Sure, what's the question?")
    P(
        s,
        "P18",
        "para",
        "validate webhook payload signature",
        "how should we check it on our side?",
        lambda s: s.say(
            "Compute HMAC-SHA256 over the raw request body with the signing secret and compare it to the `Stripe-Signature` value using `hmac.compare_digest` (constant time); reject if the timestamp is older than 5 minutes."
        ),
        note="topic words are one exchange earlier",
    )


@item("billing", "2025-05-20")
def p19(s):
    def body(s):
        s.think(
            "The stale read happens because the cache is invalidated before the read replica has caught up; the replica lag is ~300ms, so a read right after invalidation repopulates the cache with old data."
        )
        s.say("I'll delay the cache invalidation by one second after the write commits.")

    P(
        s,
        "P19",
        "para",
        "stale cache because of read replica lag",
        "after updating a tenant's address, the old one still shows for a while",
        body,
        note="explanation only in a thinking block",
    )


@item("ml", "2025-03-21")
def p20(s):
    P(
        s,
        "P20",
        "para",
        "serverless function slow first invocation",
        "the scoring lambda takes 4 seconds on a cold start",
        lambda s: s.say(
            "Importing pandas and torch at module level costs 3.5 s. I import them lazily inside the handler branch that needs them and use a slimmer layer."
        ),
    )


# ---------------------------------------------------------------- assemble
def day(d):
    y, m, dd = map(int, d.split("-"))
    return datetime(
        y,
        m,
        dd,
        random.randint(8, 18),
        random.randint(0, 59),
        random.randint(0, 59),
        random.randint(0, 999) * 1000,
        tzinfo=UTC,
    )


def main():
    sessions = []
    for proj, date, fn in PLANTS:
        s = Session(proj, day(date))
        for _ in range(random.randint(1, 3)):
            filler(s, proj)
            s.gap(random.randint(1, 20))
        fn(s)
        s.gap(random.randint(1, 20))
        for _ in range(random.randint(1, 3)):
            filler(s, proj)
            s.gap(random.randint(1, 20))
        sessions.append(s)
    # extra filler-only sessions
    start = datetime(2025, 1, 6, tzinfo=UTC)
    for i in range(24):
        proj = random.choice(list(PROJECTS))
        s = Session(
            proj, day((start + timedelta(days=random.randint(0, 140))).strftime("%Y-%m-%d"))
        )
        for _ in range(random.randint(3, 7)):
            filler(s, proj)
            s.gap(random.randint(1, 30))
        sessions.append(s)
    for s in sessions:
        s.write()
    KNOWN_PATH.write_text(json.dumps(KNOWN, indent=1, ensure_ascii=False))
    print(f"{len(sessions)} sessions, {len(KNOWN)} known items -> {OUT}")


if __name__ == "__main__":
    main()
