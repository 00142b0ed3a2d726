// The page's router: real paths (/sessions/ID#x-12), the History API, one view at a time.
// A view is `view(main, context)` and may return a function that stops what it started
// (polling, requests in flight) when the reader goes elsewhere.

import { api, clearKey, getKey, setKey } from "./api.js";
import { announce, clear, h } from "./dom.js";
import { memoriesView } from "./memories.js";
import { searchView } from "./search.js";
import { sessionView } from "./session.js";
import { sessionsView } from "./sessions.js";
import { usageView } from "./usage.js";

const ROUTES = [
  [/^\/(?:sessions\/?)?$/, "sessions", sessionsView],
  [/^\/sessions\/([^/]+)$/, "sessions", sessionView],
  [/^\/search\/?$/, "search", searchView],
  [/^\/memories\/?$/, "memories", memoriesView],
  [/^\/usage\/?$/, "usage", usageView],
];

let stopView = null;
let shown = null; // the path and query the current view was drawn for
let signInMessage = "";

function setChrome(page) {
  const nav = document.querySelector(".nav");
  const out = document.querySelector(".signout");
  const signedIn = Boolean(getKey());
  nav.hidden = !signedIn;
  out.hidden = !signedIn;
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.page === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

export function navigate(url, { replace = false } = {}) {
  if (replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  render({ focus: true });
}

function render({ focus = false } = {}) {
  if (stopView) stopView();
  stopView = null;
  shown = window.location.pathname + window.location.search;
  const main = clear(document.getElementById("main"));
  if (!getKey()) {
    setChrome(null);
    loginView(main);
    return;
  }
  const path = window.location.pathname;
  const found = ROUTES.find(([pattern]) => pattern.test(path));
  if (!found) {
    setChrome(null);
    document.title = "Not found · Memoir";
    main.append(h("h1", { tabindex: "-1" }, "No such page"), h("p", null, h("a", { href: "/", "data-nav": true }, "Go to your sessions")));
    return;
  }
  const [pattern, page, view] = found;
  setChrome(page);
  const controller = new AbortController();
  const params = path.match(pattern).slice(1).map(decodeURIComponent);
  const context = {
    params,
    query: new URLSearchParams(window.location.search),
    signal: controller.signal,
    navigate,
  };
  const stop = view(main, context);
  stopView = () => {
    controller.abort();
    if (typeof stop === "function") stop();
  };
  if (focus && !window.location.hash) {
    // a new page: focus its heading (unless the view put focus on a field of its own)
    const heading = main.querySelector("h1");
    if (heading && !main.contains(document.activeElement)) heading.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }
}

function loginView(main) {
  document.title = "Sign in · Memoir";
  const input = h("input", {
    id: "api-key", name: "api-key", type: "password", autocomplete: "off", spellcheck: "false",
    required: true, "aria-describedby": "key-help",
  });
  const problem = h("div", { class: "error-box", role: "alert", hidden: !signInMessage }, signInMessage);
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  // method=post: were the script to fail, a browser must never put the key in a URL
  const form = h("form", { method: "post", action: "/", novalidate: true },
    h("label", { for: "api-key" }, "API key", input),
    h("p", { id: "key-help", class: "muted" },
      "Your own sessions (synced from this machine, user ", h("code", null, "local"),
      "): open the sign-in link ", h("code", null, "memoir serve"),
      " printed, or make a key with ", h("code", null, "memoir users key local"),
      ". Another user: ", h("code", null, "memoir users add NAME"),
      ". The key is kept in this tab only and sent in the Authorization header."),
    problem, submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) {
      problem.textContent = "Paste your API key.";
      problem.hidden = false;
      input.focus();
      return;
    }
    submit.disabled = true;
    try {
      await api("/api/sessions?limit=1", { key });
      setKey(key);
      signInMessage = "";
      announce("Signed in");
      render({ focus: true });
    } catch (error) {
      problem.textContent = error.status === 401 ? "That key is unknown or revoked." : error.message;
      problem.hidden = false;
      submit.disabled = false;
      input.focus();
    }
  });
  main.append(h("section", { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title", tabindex: "-1" }, "Sign in to Memoir"), form));
  input.focus();
}

document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest("a[href]");
  if (!link || link.target || link.hasAttribute("download")) return;
  const url = new URL(link.href, window.location.href);
  if (url.origin !== window.location.origin || url.pathname.startsWith("/api/") || url.pathname.startsWith("/static/") || url.pathname === "/docs") return;
  if (url.pathname === window.location.pathname && url.search === window.location.search && url.hash) return; // an anchor on this page
  event.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});

window.addEventListener("popstate", () => {
  // back or forward between anchors of one page: the view follows the hash (hashchange)
  if (getKey() && shown === window.location.pathname + window.location.search) return;
  render({ focus: false });
});

window.addEventListener("memoir:signed-out", (event) => {
  signInMessage = `Signed out: ${event.detail}`;
  render({ focus: true });
});

document.querySelector(".signout").addEventListener("click", () => {
  const key = getKey();
  // a key the page got from a sign-in link ends on the server too (an API key is left alone)
  if (key) api("/logout", { method: "POST", key }).catch(() => {});
  clearKey();
  signInMessage = "";
  announce("Signed out");
  render({ focus: true });
});

/**
 * A sign-in link (`memoir serve` prints `/#login=TOKEN`): the token leaves the address bar
 * and this history entry first, then is traded once for a key of the page.
 */
async function signInWithLink(token) {
  window.history.replaceState(null, "", window.location.pathname + window.location.search);
  clear(document.getElementById("main")).append(h("p", { class: "muted" }, "Signing in…"));
  try {
    const answer = await api("/login", { method: "POST", body: { token }, anonymous: true });
    setKey(answer.data.key);
    signInMessage = "";
    announce(`Signed in as ${answer.data.user}`);
  } catch (error) {
    clearKey();
    signInMessage = error.message;
  }
  render({ focus: true });
}

const link = /^#login=([A-Za-z0-9_-]{1,200})$/.exec(window.location.hash);
if (link) signInWithLink(link[1]);
else render({ focus: false });
