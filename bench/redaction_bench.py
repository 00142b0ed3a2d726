"""Redaction cost per MB of transcript text (issue 24, item 2).

Redaction runs on the model path (every request to a non-offline model), not on sync. This
times :func:`memoir.secrets.redact` over realistic conversation text: the user and assistant
text and tool output of the Claude Code fixtures, repeated to ``--mb`` MB, with a secret of
several kinds planted every ``--every`` lines (a worst-ish case: real sessions hold far fewer).

    .venv/bin/python bench/redaction_bench.py --mb 8 --runs 3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from memoir.secrets import redact

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
SECRETS = (
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLQ",
    'export GITHUB_TOKEN="ghp_' + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + '"',
    "DB_PASSWORD=s3cr3t-Pa55w0rd-9x",
    "curl -H 'Authorization: Bearer sk-" + "Xy7" * 16 + "' https://api.example.com",
)


def _texts() -> list[str]:
    out: list[str] = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            content = (record.get("message") or {}).get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict):
                        for key in ("text", "content"):
                            if isinstance(block.get(key), str):
                                out.append(block[key])
    return [t for t in out if t.strip()]


def corpus(mb: float, every: int) -> str:
    texts = _texts() or ["The build passed; next we look at the flaky test in ci."]
    parts: list[str] = []
    size, i, goal = 0, 0, int(mb * 1024 * 1024)
    while size < goal:
        text = texts[i % len(texts)]
        if every and i % every == 0:
            text += "\n" + SECRETS[(i // every) % len(SECRETS)]
        parts.append(text)
        size += len(text.encode()) + 1
        i += 1
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--every", type=int, default=200, help="a secret every N texts (0: none)")
    args = ap.parse_args()
    text = corpus(args.mb, args.every)
    mb = len(text.encode()) / (1024 * 1024)
    times, found = [], 0
    for _ in range(args.runs):
        start = time.process_time()
        result = redact(text)
        times.append(time.process_time() - start)
        found = sum(result.counts.values())
    best = min(times)
    print(
        json.dumps(
            {
                "mb": round(mb, 2),
                "secrets_redacted": found,
                "cpu_s_best": round(best, 3),
                "cpu_s_per_mb": round(best / mb, 3),
                "mb_per_cpu_s": round(mb / best, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
