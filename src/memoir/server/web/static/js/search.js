// Search: the query language of `memoir search`, its modes and filters; each hit's snippet
// with its matches marked, a link to its exchange, and the session's summary beside it.

import { api } from "./api.js";
import { clear, errorBox, exchangeHref, formatTime, h, num, options } from "./dom.js";

const MODES = [["", "Default"], ["text", "Words"], ["vector", "Meaning"], ["hybrid", "Words + meaning"]];
const ROLES = [["", "Anyone"], ["user", "User"], ["assistant", "Assistant"], ["tool", "Tools"]];
const HARNESSES = [["", "Any harness"], ["claude-code", "Claude Code"], ["codex", "Codex"], ["gemini-cli", "Gemini CLI"], ["opencode", "OpenCode"], ["aider", "Aider"], ["generic", "Generic JSON"], ["api", "HTTP API"]];
const FIELDS = ["q", "mode", "project", "harness", "role", "after", "before"];
const SUMMARY_CHARS = 420;

export function searchView(main, { query, signal, navigate }) {
  const chosen = Object.fromEntries(FIELDS.map((f) => [f, query.get(f) || ""]));
  document.title = chosen.q ? `${chosen.q} · Search · Memoir` : "Search · Memoir";
  const q = h("input", { type: "search", name: "q", value: chosen.q, required: true, autocomplete: "off", "aria-describedby": "search-help" });
  const mode = h("select", { name: "mode" }, options(MODES, chosen.mode));
  const project = h("select", { name: "project" }, options([["", "All projects"], ...(chosen.project ? [[chosen.project, chosen.project]] : [])], chosen.project));
  const harness = h("select", { name: "harness" }, options(HARNESSES, chosen.harness));
  const role = h("select", { name: "role" }, options(ROLES, chosen.role));
  const after = h("input", { type: "date", name: "after", value: chosen.after });
  const before = h("input", { type: "date", name: "before", value: chosen.before });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Search conversations" },
    h("label", { class: "grow" }, "Search your conversations", q),
    h("label", null, "Mode", mode),
    h("label", null, "Project", project),
    h("label", null, "Harness", harness),
    h("label", null, "Said by", role),
    h("label", null, "From", after),
    h("label", null, "Until", before),
    h("button", { type: "submit", class: "primary" }, "Search"));
  const help = h("p", { id: "search-help", class: "muted" },
    "All words must match (else any). Use \"a phrase\", a OR b, -word to exclude, word* for a prefix. ",
    "The default mode searches words and meaning together when embeddings are installed, else words.");
  const countLine = h("p", { class: "count-line", role: "status" });
  const results = h("ol", { class: "hits", "aria-label": "Hits" });
  main.append(h("h1", { tabindex: "-1" }, "Search"), form, help, countLine, results);

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const field of [q, mode, project, harness, role, after, before]) if (field.value.trim()) params.set(field.name, field.value.trim());
    navigate(`/search?${params}`);
  });

  // the project list for the filter (the caller's own projects)
  api("/api/sessions?order=recent&limit=1", { signal }).then((body) => {
    const current = project.value;
    clear(project).append(...options([["", "All projects"], ...body.data.facets.projects.map((p) => [p, p])], current));
  }).catch(() => { /* the filter keeps what the URL named */ });

  if (!chosen.q) {
    q.focus();
    return undefined;
  }
  countLine.textContent = "Searching…";
  const params = new URLSearchParams({ limit: "30" });
  for (const f of FIELDS) if (chosen[f]) params.set(f, chosen[f]);
  api(`/api/search?${params}`, { signal }).then((body) => {
    const hits = body.data.hits;
    countLine.textContent = hits.length ? `${num(hits.length)} ${hits.length === 1 ? "hit" : "hits"}, best first` : "";
    if (!hits.length) results.append(h("li", { class: "empty" }, "Nothing matched. Try fewer words, or another mode."));
    for (const hit of hits) results.append(hitItem(hit));
  }).catch((error) => {
    if (error.name === "AbortError") return;
    countLine.textContent = "";
    results.append(h("li", null, errorBox(error)));
  });
  return undefined;
}

/** The snippet as text nodes, its `highlights` ([start, end) spans) as <mark>s. */
export function marked(text, spans) {
  const out = [];
  let at = 0;
  for (const [start, end] of [...(spans || [])].sort((a, b) => a[0] - b[0])) {
    if (start < at || end <= start) continue;
    if (start > at) out.push(text.slice(at, start));
    out.push(h("mark", null, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

function hitItem(hit) {
  const where = [hit.project || "(no project)", hit.timestamp ? formatTime(hit.timestamp) : null].filter(Boolean).join(" · ");
  const summaryText = hit.summary || "";
  let summary;
  if (!summaryText) summary = h("p", null, "No summary of this session yet.");
  else if (summaryText.length <= SUMMARY_CHARS) summary = h("p", null, summaryText);
  else {
    summary = h("details", null,
      h("summary", null, `${summaryText.slice(0, SUMMARY_CHARS).trimEnd()}…`),
      h("p", null, summaryText.slice(SUMMARY_CHARS)));
  }
  return h("li", { class: "hit" },
    h("a", { class: "hit-link", href: exchangeHref(hit.session_id, hit.exchange_id), "data-nav": true },
      h("span", { class: "hit-where" }, where),
      h("p", { class: "snippet" }, marked(hit.snippet || "", hit.highlights))),
    h("aside", { class: "hit-summary", "aria-label": "Session summary" },
      h("h3", null, "Session summary"), summary));
}
