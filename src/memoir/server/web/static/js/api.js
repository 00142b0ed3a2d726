// The API under /api with the caller's key. The key lives in this tab's session storage
// (gone when the tab closes) and travels only in the Authorization header, never in a URL
// (a sign-in link's one-time token rides in the fragment, which no request carries).

const KEY = "memoir.apiKey";

export function getKey() {
  try { return window.sessionStorage.getItem(KEY); } catch { return null; }
}

export function setKey(key) { window.sessionStorage.setItem(KEY, key); }

export function clearKey() {
  try { window.sessionStorage.removeItem(KEY); } catch { /* storage unavailable: nothing kept */ }
}

/**
 * A failed call. `status` is the HTTP status (0: no answer arrived), `code` the API's
 * error code. `lost` is true when the request may have reached the server but its answer
 * never came back (a timeout or a dropped connection): what it did must be read back.
 */
export class ApiError extends Error {
  constructor(status, code, message, { lost = false } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.lost = lost;
  }
}

/** Calls that answer 401 send the reader back to the sign-in form (app.js listens). */
function signedOut(message) {
  clearKey();
  window.dispatchEvent(new CustomEvent("memoir:signed-out", { detail: message }));
}

/**
 * `api(path, {method, body, timeoutMs, signal, key, anonymous})` → the parsed JSON body.
 * `signal` aborts it (the view went away: rejects with an AbortError, not an ApiError).
 * `anonymous` sends no key (and a 401 then signs nobody out).
 */
export async function api(path, { method = "GET", body, timeoutMs = 15000, signal, key, anonymous = false } = {}) {
  const useKey = anonymous ? null : key || getKey();
  const headers = { Accept: "application/json" };
  if (useKey) headers.Authorization = `Bearer ${useKey}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const timer = new AbortController();
  const timeout = window.setTimeout(() => timer.abort(), timeoutMs);
  const onAbort = () => timer.abort();
  if (signal) {
    if (signal.aborted) timer.abort();
    signal.addEventListener("abort", onAbort, { once: true });
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: timer.signal,
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    if (signal && signal.aborted) throw new DOMException("the view was left", "AbortError");
    const timedOut = timer.signal.aborted;
    throw new ApiError(0, timedOut ? "timeout" : "network",
      timedOut ? "The server did not answer in time." : "The connection to the server was lost.",
      { lost: true });
  } finally {
    window.clearTimeout(timeout);
    if (signal) signal.removeEventListener("abort", onAbort);
  }
  let payload = null;
  try {
    payload = await response.json();
  } catch {
    if (response.ok) throw new ApiError(response.status, "bad_response", "The server's answer was not JSON.", { lost: true });
  }
  if (!response.ok) {
    const error = payload && payload.error ? payload.error : {};
    const message = error.message || `The server answered ${response.status}.`;
    if (response.status === 401 && !key && !anonymous) signedOut(message);
    throw new ApiError(response.status, error.code || "error", message);
  }
  return payload;
}

/** Every page of a list route (`next_cursor` → `?after=` for events and exchanges). */
export async function allPages(path, field, { signal, pageSize = 1000 } = {}) {
  const out = [];
  let after = 0;
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api(`${path}${sep}after=${after}&limit=${pageSize}`, { signal });
    out.push(...page.data[field]);
    if (!page.next_cursor) return out;
    after = page.next_cursor;
  }
}
