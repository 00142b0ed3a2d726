"""A tiny LoCoMo conversation for the benchmark tests: two dated sessions, a shared photo,
and questions of every kind the loader keeps or drops (adversarial, broken evidence)."""

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
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Hi Ana, back from the lake?"},
            {"speaker": "Ana", "dia_id": "D1:2", "text": "Yes! We kayaked all morning."},
            {
                "speaker": "Bo",
                "dia_id": "D1:3",
                "text": "Nice, did you see otters?",
                "blip_caption": "a photo of a kayak on a lake",
            },
            {"speaker": "Ana", "dia_id": "D1:4", "text": "Two otters near the dock."},
        ],
        "session_2_date_time": "9:05 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a puppy named Pixel."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Congrats on Pixel!"},
        ],
        "qa": [
            {
                "question": "What did Ana see?",
                "answer": "otters",
                "evidence": ["D1:4"],
                "category": 4,
            },
            {"question": "When?", "answer": "x", "evidence": ["D1:2", "D2:1"], "category": 2},
            {"question": "Adversarial", "evidence": ["D1:2"], "category": 5},
            {
                "question": "Broken",
                "answer": "x",
                "evidence": ["D8:6; D9:17", "D9:99"],
                "category": 1,
            },
        ],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
