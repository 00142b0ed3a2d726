"""The summary routes over the jobs engine: 202 with a job, the same job on duplicates,
503 (and reads still working) when the configured Redis is unreachable."""

from __future__ import annotations

from dataclasses import replace

from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.server import create_app

from .server_api import Api


def _session_with_events(api: Api) -> str:
    sid = api.make_session()
    messages = [
        {"role": "user", "content": "plan the migration to postgres", "id": "1"},
        {"role": "assistant", "content": "first dump, then restore", "id": "2"},
    ]
    api.client.post(f"/api/sessions/{sid}/events", json={"messages": messages}, headers=api.alice)
    return sid


def test_summary_get_and_regenerate(api: Api) -> None:
    sid = _session_with_events(api)
    got = api.client.get(f"/api/sessions/{sid}/summary", headers=api.alice)
    assert got.status_code == 200
    assert got.json()["data"] == {
        "summary": None,
        "updated_at": None,
        "model": None,
        "coverage": None,
        "job": None,
    }
    first = api.client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.alice)
    assert first.status_code == 202, first.text
    job = first.json()["data"]["job"]
    assert job["state"] == "queued" and job["session"] == sid
    again = api.client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.alice)
    assert again.status_code == 202 and again.json()["data"]["job"]["id"] == job["id"]
    polled = api.client.get(f"/api/sessions/{sid}/summary", headers=api.alice).json()
    assert polled["data"]["job"]["id"] == job["id"]
    # another user's session: 404, and no job for it
    other = api.client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.bob)
    assert other.status_code == 404


def test_regenerate_fails_closed_without_redis(api: Api, memoir: Memoir) -> None:
    sid = _session_with_events(api)
    memoir.settings = replace(memoir.settings, redis_url="redis://127.0.0.1:1/0")
    memoir._jobs = None  # built again from the new settings
    with TestClient(create_app(memoir), raise_server_exceptions=False) as client:
        post = client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.alice)
        assert post.status_code == 503, post.text
        assert post.json()["error"]["code"] == "admission_unavailable"
        got = client.get(f"/api/sessions/{sid}/summary", headers=api.alice)
    assert got.status_code == 200  # reads keep working from the database
