// Memories: what Memoir kept of the caller's conversations — each item's kind, scope,
// keys and dates, every evidence quote linked to the exchange it was said in, and Forget.

import { api } from "./api.js";
import { announce, clear, errorBox, exchangeHref, formatDay, h, num, options, time } from "./dom.js";

const KINDS = [["", "Any kind"], ["fact", "Facts"], ["preference", "Preferences"], ["decision", "Decisions"], ["plan", "Plans"], ["constraint", "Constraints"]];
const SCOPES = [["", "Any scope"], ["global", "Everywhere (global)"], ["project", "One project"]];

export function memoriesView(main, { query, signal }) {
  document.title = "Memories · Memoir";
  const q = h("input", { type: "search", name: "q", value: query.get("q") || "", autocomplete: "off" });
  const project = h("select", { name: "project" }, options([["", "All projects"]], ""));
  const kind = h("select", { name: "kind" }, options(KINDS, query.get("kind") || ""));
  const scope = h("select", { name: "scope" }, options(SCOPES, query.get("scope") || ""));
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter memories" },
    h("label", { class: "grow" }, "What to look for (words, keys)", q),
    h("label", null, "Project", project),
    h("label", null, "Kind", kind),
    h("label", null, "Scope", scope),
    h("button", { type: "submit" }, "Filter"));
  const countLine = h("p", { class: "count-line", role: "status" }, "Loading memories…");
  const list = h("ul", { class: "memory-list", "aria-label": "Memories" });
  main.append(h("h1", { tabindex: "-1" }, "Memories"), form, countLine, list);

  let items = [];
  let wantedProject = query.get("project") || "";

  function show() {
    clear(list);
    const shown = items.filter((i) => (!kind.value || i.kind === kind.value) && (!scope.value || i.scope === scope.value));
    countLine.textContent = items.length
      ? `${num(shown.length)} of ${num(items.length)} ${items.length === 1 ? "memory" : "memories"}`
      : "";
    if (!items.length) {
      list.append(h("li", { class: "empty" }, q.value || wantedProject
        ? "No memories match."
        : ["Nothing remembered yet. Memories are extracted as conversations are compacted, or when asked (",
          h("code", null, "memoir remember"), ", POST …/remember)."]));
      return;
    }
    if (!shown.length) list.append(h("li", { class: "empty" }, "No memories of this kind and scope."));
    for (const item of shown) list.append(card(item));
  }

  async function load() {
    const params = new URLSearchParams({ limit: "1000" });
    if (q.value.trim()) params.set("q", q.value.trim());
    if (wantedProject) params.set("project", wantedProject);
    try {
      const body = await api(`/api/memories?${params}`, { signal });
      items = body.data.memories;
      show();
    } catch (error) {
      if (error.name === "AbortError") return;
      countLine.textContent = "";
      clear(list).append(h("li", null, errorBox(error)));
    }
  }

  function remember() {
    const params = new URLSearchParams();
    for (const field of [q, project, kind, scope]) if (field.value.trim()) params.set(field.name, field.value.trim());
    const qs = params.toString();
    window.history.replaceState(null, "", `/memories${qs ? `?${qs}` : ""}`);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    wantedProject = project.value;
    remember();
    load();
  });
  project.addEventListener("change", () => { wantedProject = project.value; remember(); load(); });
  kind.addEventListener("change", () => { remember(); show(); });
  scope.addEventListener("change", () => { remember(); show(); });

  function card(item) {
    const forget = h("button", { type: "button", class: "danger" }, "Forget");
    const actions = h("div", { class: "actions" }, forget);
    const node = h("li", { class: "memory", "aria-label": item.content },
      h("p", { class: "content" }, item.content),
      h("div", { class: "tags" },
        h("span", { class: "badge strong" }, item.kind),
        h("span", { class: "badge" }, item.scope === "project" ? `project: ${item.project}` : item.scope),
        item.scope !== "project" && item.project ? h("span", { class: "badge" }, `from ${item.project}`) : null,
        when(item)),
      item.keys && item.keys.length ? h("ul", { class: "keys", "aria-label": "Keys" }, item.keys.map((k) => h("li", null, k))) : null,
      evidence(item),
      actions);
    forget.addEventListener("click", () => confirmForget(item, node, actions, forget));
    return node;
  }

  function confirmForget(item, node, actions, forget) {
    const yes = h("button", { type: "button", class: "danger" }, "Forget it");
    const no = h("button", { type: "button" }, "Keep");
    const question = h("span", null, "Forget this memory? It is no longer recalled.");
    clear(actions).append(question, yes, no);
    yes.focus();
    no.addEventListener("click", () => { clear(actions).append(forget); forget.focus(); });
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      no.disabled = true;
      try {
        await api(`/api/memories/${encodeURIComponent(item.id)}`, { method: "DELETE", signal });
      } catch (error) {
        if (error.name === "AbortError") return;
        clear(actions).append(errorBox(error), forget);
        return;
      }
      items = items.filter((i) => i.id !== item.id);
      const next = node.nextElementSibling || node.previousElementSibling;
      show();
      announce(`Forgot: ${item.content}`);
      const focusable = next && next.querySelector && list.contains(next) ? next.querySelector("button") : null;
      (focusable || document.querySelector("main h1")).focus();
    });
  }

  api("/api/sessions?order=recent&limit=1", { signal }).then((body) => {
    clear(project).append(...options([["", "All projects"], ...body.data.facets.projects.map((p) => [p, p])], wantedProject));
  }).catch(() => { /* the filter keeps "All projects" */ });
  load();
}

function when(item) {
  const t = item.temporal || {};
  const [from, until] = [t.start ? formatDay(t.start) : "", t.end ? formatDay(t.end) : ""];
  if (from && until) return h("span", { class: "badge" }, from === until ? from : `${from} – ${until}`);
  if (from) return h("span", { class: "badge" }, `since ${from}`);
  if (until) return h("span", { class: "badge" }, `until ${until}`);
  return item.observed_at ? h("span", { class: "badge" }, "said ", time(item.observed_at, { text: formatDay(item.observed_at) })) : null;
}

function evidence(item) {
  const sources = item.sources || [];
  if (!sources.length) return null;
  return h("ul", { class: "evidence", "aria-label": "Evidence" }, sources.map((s) => h("li", null,
    h("blockquote", null, h("p", null, `“${s.quote}”`)),
    h("a", { href: exchangeHref(s.session_id, s.exchange_id, s.ordinal), "data-nav": true },
      `Where it was said: ${s.session_id}, event ${s.ordinal}`))));
}
