// Sessions: the caller's conversations, the most recently active first, with counts;
// filtered by project, harness and the dates they were active (kept in the URL's query).

import { api } from "./api.js";
import { ago, clear, errorBox, h, num, options, sessionPath, time } from "./dom.js";

const HARNESSES = [["", "Any harness"], ["claude-code", "Claude Code"], ["codex", "Codex"], ["gemini-cli", "Gemini CLI"], ["opencode", "OpenCode"], ["aider", "Aider"], ["generic", "Generic JSON"], ["api", "HTTP API"]];
const FIELDS = ["project", "harness", "after", "before"];

export function harnessLabel(value) {
  const found = HARNESSES.find(([v]) => v === value);
  return found ? found[1] : value;
}

export function sessionsView(main, { query, signal }) {
  document.title = "Sessions · Memoir";
  const chosen = Object.fromEntries(FIELDS.map((f) => [f, query.get(f) || ""]));
  const project = h("select", { name: "project" }, options([["", "All projects"]], chosen.project));
  const harness = h("select", { name: "harness" }, options(HARNESSES, chosen.harness));
  const after = h("input", { type: "date", name: "after", value: chosen.after });
  const before = h("input", { type: "date", name: "before", value: chosen.before });
  const reset = h("button", { type: "reset" }, "Clear filters");
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter sessions" },
    h("label", null, "Project", project),
    h("label", null, "Harness", harness),
    h("label", null, "Active from", after),
    h("label", null, "Active until", before),
    reset);
  const countLine = h("p", { class: "count-line", role: "status" }, "Loading sessions…");
  const list = h("ol", { class: "session-list", "aria-label": "Sessions" });
  const more = h("button", { type: "button", class: "more", hidden: true }, "Show more sessions");
  const problem = h("div");
  main.append(h("h1", { tabindex: "-1" }, "Sessions"), form, countLine, problem, list, more);

  let cursor = null;
  let seen = new Set();
  let projectsKnown = false;

  function filters() {
    return { project: project.value, harness: harness.value, after: after.value, before: before.value };
  }

  async function load(append) {
    const wanted = filters();
    const params = new URLSearchParams({ order: "recent", limit: "50" });
    for (const [k, v] of Object.entries(wanted)) if (v) params.set(k, v);
    if (append && cursor) params.set("cursor", cursor);
    more.disabled = true;
    clear(problem);
    try {
      const body = await api(`/api/sessions?${params}`, { signal });
      const { sessions, total, facets } = body.data;
      if (!projectsKnown) {
        const current = project.value;
        clear(project).append(...options([["", "All projects"], ...facets.projects.map((p) => [p, p])], current));
        projectsKnown = true;
      }
      if (!append) { clear(list); seen = new Set(); }
      for (const s of sessions) {
        if (seen.has(s.id)) continue;
        seen.add(s.id);
        list.append(row(s));
      }
      cursor = body.next_cursor;
      more.hidden = !cursor;
      const filtered = Object.values(wanted).some(Boolean);
      countLine.textContent = total === 0
        ? ""
        : `${num(total)} ${total === 1 ? "session" : "sessions"}${filtered ? " match" : ""} · showing ${num(seen.size)}`;
      if (total === 0) {
        list.append(h("li", { class: "empty" }, filtered
          ? "No sessions match these filters."
          : ["No sessions yet. Sessions synced with ", h("code", null, "memoir sync"),
            " belong to the user local; sessions created over the API belong to the key's user."]));
      }
    } catch (error) {
      if (error.name === "AbortError") return;
      countLine.textContent = "";
      problem.append(errorBox(error));
    } finally {
      more.disabled = false;
    }
  }

  function applyFilters() {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filters())) if (v) params.set(k, v);
    const qs = params.toString();
    window.history.replaceState(null, "", `/sessions${qs ? `?${qs}` : ""}`);
    cursor = null;
    load(false);
  }

  form.addEventListener("change", applyFilters);
  form.addEventListener("submit", (e) => { e.preventDefault(); applyFilters(); });
  form.addEventListener("reset", () => window.setTimeout(applyFilters, 0));
  more.addEventListener("click", () => load(true));
  load(false);
}

function row(s) {
  const flags = [
    s.incognito && h("span", { class: "badge" }, "incognito"),
    s.archived && h("span", { class: "badge" }, "archived"),
    s.subagent && h("span", { class: "badge" }, "subagent"),
    s.memory_disabled && h("span", { class: "badge" }, "memory off"),
  ].filter(Boolean);
  const last = s.last_at || s.updated_at || s.created_at;
  return h("li", { class: "session-row" },
    h("div", null,
      h("a", { class: "title", href: sessionPath(s.id), "data-nav": true }, s.project || "(no project)"),
      " ", h("span", { class: "badge strong" }, harnessLabel(s.harness)),
      h("div", { class: "sid" }, s.name || s.id), // your name for it, else its id
      flags.length ? h("div", { class: "flags" }, flags) : null),
    h("div", { class: "counts" },
      h("span", null, `${num(s.exchanges)} ${s.exchanges === 1 ? "exchange" : "exchanges"}`),
      h("span", null, `${num(s.events)} ${s.events === 1 ? "event" : "events"}`)),
    h("div", { class: "when" }, last ? time(last, { text: ago(last) }) : h("span", { class: "muted" }, "no activity")));
}
