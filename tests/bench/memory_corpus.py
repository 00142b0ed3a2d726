"""A tiny LoCoMo conversation with per-speaker observations for the memory benchmark's
tests: which turns the offline extractor cites, and which the observations name, are
known by construction (see the figures in ``test_bench_memories.py``)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_conversation"]


def write_conversation(path: Path) -> Path:
    data = {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Hi Ana, how was your week?"},
            {"speaker": "Ana", "dia_id": "D1:2", "text": "I prefer green tea over coffee now."},
            {"speaker": "Bo", "dia_id": "D1:3", "text": "I live in Berlin these days."},
            {"speaker": "Ana", "dia_id": "D1:4", "text": "Two otters swam near the dock."},
        ],
        "session_1_observation": {
            "Ana": [["Ana prefers green tea.", "D1:2"], ["Ana saw otters.", "D1:4"]],
            "Bo": [["Bo lives in Berlin.", "D1:3"]],
        },
        "session_2_date_time": "9:05 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a puppy named Pixel."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Congrats! I prefer cats myself."},
            {"speaker": "Ana", "dia_id": "D2:3", "text": "Did you watch the match?"},
        ],
        "session_2_observation": {
            # one id names a turn of the other speaker, one a list, one a missing turn
            "Ana": [["Ana follows the match.", ["D2:3"]], ["Bo is happy for Ana.", "D2:2"]],
            "Bo": [["Bo prefers cats.", "D2:2; D9:9"]],
        },
        "session_3_date_time": "9:05 am on 2 June, 2023",
        "session_3": [],
        "qa": [],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
