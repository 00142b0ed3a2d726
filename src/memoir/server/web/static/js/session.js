// One session: its transcript grouped by exchange (each an anchor, #x-ORDINAL, that search
// hits and memory evidence link to; each event one too, #e-ORDINAL), long tool output
// folded, and the Session Memory panel beside it.

import { allPages, api } from "./api.js";
import { clear, errorBox, fill, formatTime, h, num, richText, time } from "./dom.js";
import { mountPanel } from "./panel.js";
import { harnessLabel } from "./sessions.js";

const FOLD_CHARS = 700;
const FOLD_LINES = 12;

export function sessionView(main, { params, signal }) {
  const [sessionId] = params;
  document.title = `${sessionId} · Memoir`;
  const heading = h("h1", { tabindex: "-1" }, sessionId);
  const meta = h("p", { class: "session-meta" });
  const panelSlot = h("aside", { class: "panel", "aria-labelledby": "panel-title" });
  const transcript = h("section", { class: "transcript", "aria-label": "Transcript" },
    h("p", { class: "muted", role: "status" }, "Loading the transcript…"));
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "/sessions", "data-nav": true }, "← Sessions")),
    heading, meta, h("div", { class: "session-layout" }, panelSlot, transcript));

  const stopPanel = mountPanel(panelSlot, sessionId, { signal });
  const onHash = () => showTarget(transcript);
  window.addEventListener("hashchange", onHash);

  (async () => {
    try {
      const [session, exchanges, events] = await Promise.all([
        api(`/api/sessions/${encodeURIComponent(sessionId)}`, { signal }),
        allPages(`/api/sessions/${encodeURIComponent(sessionId)}/exchanges`, "exchanges", { signal }),
        allPages(`/api/sessions/${encodeURIComponent(sessionId)}/events`, "events", { signal }),
      ]);
      const s = session.data.session;
      const shown = s.name || s.id; // your name for it, else its id
      heading.textContent = s.project ? `${s.project} · ${shown}` : shown;
      document.title = `${heading.textContent} · Memoir`;
      fill(meta,
        h("span", { class: "badge strong" }, harnessLabel(s.harness)),
        h("span", null, "Started ", time(exchanges.length ? exchanges[0].started_at || s.created_at : s.created_at)),
        h("span", null, `${num(exchanges.length)} exchanges · ${num(events.length)} events`),
        s.incognito ? h("span", { class: "badge" }, "incognito") : null,
        s.archived ? h("span", { class: "badge" }, "archived") : null,
        s.memory_disabled ? h("span", { class: "badge" }, "memory off") : null);
      fill(transcript, renderTranscript(exchanges, events));
      showTarget(transcript);
    } catch (error) {
      if (error.name === "AbortError") return;
      clear(transcript).append(errorBox(error));
    }
  })();

  return () => {
    stopPanel();
    window.removeEventListener("hashchange", onHash);
  };
}

/** Scroll to the exchange (or event) the URL's fragment names, mark it, move focus to it. */
function showTarget(transcript) {
  for (const old of transcript.querySelectorAll(".is-target")) old.classList.remove("is-target");
  const id = decodeURIComponent(window.location.hash.slice(1));
  if (!/^[xe]-\d+$/.test(id)) return;
  const target = document.getElementById(id);
  if (!target) return;
  const block = target.classList.contains("exchange") ? target : target.closest(".exchange") || target;
  block.classList.add("is-target");
  block.scrollIntoView({ block: "start" });
  block.focus({ preventScroll: true });
}

function renderTranscript(exchanges, events) {
  if (!events.length) return [h("p", { class: "empty" }, "This session has no events yet.")];
  const groups = [];
  let at = 0;
  const loose = (list) => list.length && groups.push({ exchange: null, events: list });
  for (const x of exchanges) {
    const before = [];
    while (at < events.length && events[at].ordinal < x.first_ordinal) before.push(events[at++]);
    loose(before);
    const inside = [];
    while (at < events.length && events[at].ordinal <= x.last_ordinal) inside.push(events[at++]);
    groups.push({ exchange: x, events: inside });
  }
  loose(events.slice(at));
  let n = 0;
  return groups.map((g) => (g.exchange ? exchangeBlock(g.exchange, g.events, ++n) : looseBlock(g.events)));
}

function exchangeBlock(x, events, n) {
  const id = `x-${x.first_ordinal}`;
  return h("article", { class: "exchange", id, tabindex: "-1", "aria-label": `Exchange ${n}` },
    h("div", { class: "exchange-head" },
      h("a", { href: `#${id}`, title: "Link to this exchange" }, `Exchange ${n}`),
      x.started_at ? h("time", { datetime: x.started_at }, formatTime(x.started_at)) : null),
    events.map(turn));
}

function looseBlock(events) {
  return h("div", { class: "exchange loose" },
    h("div", { class: "exchange-head" }, h("span", null, "Outside any exchange")),
    events.map(turn));
}

function speaker(e, fallback) {
  const name = e.payload && typeof e.payload.speaker === "string" ? e.payload.speaker : "";
  return name ? `${name} (${fallback.toLowerCase()})` : fallback;
}

function turn(e) {
  const attrs = (cls) => ({ class: `turn ${cls}`, id: `e-${e.ordinal}` });
  switch (e.kind) {
    case "user_text":
      return h("div", attrs("user"), h("span", { class: "who" }, speaker(e, "User")), richText(e.text));
    case "assistant_text":
      return h("div", attrs("assistant"), h("span", { class: "who" }, speaker(e, "Assistant")), richText(e.text));
    case "tool_call":
      return h("div", attrs("tool"), block(`Tool call${e.tool_name ? ` · ${e.tool_name}` : ""}`, e.text, false));
    case "tool_result":
      return h("div", attrs("tool"), block(`Tool result${e.tool_name ? ` · ${e.tool_name}` : ""}`, e.text, false));
    case "thinking":
      return h("div", attrs("thinking"), block("Thinking", e.text, true));
    case "harness": // the agent's CLI wrote it in the user's place: shown dimmed, never "User"
      return h("div", { ...attrs("harness"), title: "Written by the agent's CLI, not typed by the user" },
        block(harnessTextLabel(e), e.text, false));
    default:
      return h("div", attrs("note"), block(noteLabel(e), e.text, false));
  }
}

function harnessTextLabel(e) {
  const shape = e.payload && typeof e.payload.harness === "string" ? e.payload.harness.replace(/_/g, " ") : "";
  return shape ? `Harness · ${shape}` : "Harness";
}

function noteLabel(e) {
  const labels = { attachment: "Attachment", meta: "Note", compaction: "Compaction" };
  return labels[e.kind] || e.kind;
}

/** A labelled block of verbatim text, folded behind <details> when long (or always). */
function block(label, text, alwaysFold) {
  const body = String(text || "");
  const lines = body.split("\n");
  const long = body.length > FOLD_CHARS || lines.length > FOLD_LINES;
  const pre = h("pre", null, h("code", null, body));
  if (!long && !alwaysFold) return [h("span", { class: "who" }, label), body ? pre : h("span", { class: "muted" }, "(empty)")];
  const first = lines.find((l) => l.trim()) || "";
  const size = lines.length > 1 ? `${num(lines.length)} lines` : `${num(body.length)} characters`;
  return h("details", null,
    h("summary", null, h("strong", null, label), ` — ${size}: `,
      h("span", { class: "preview" }, first.length > 100 ? `${first.slice(0, 100)}…` : first)),
    pre);
}
