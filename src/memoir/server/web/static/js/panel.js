// The Session Memory panel: the session's summary (text, when it was written, by which
// model, how much of the conversation it covers) and its regeneration as a background job.
//
// Regenerate POSTs once; the page then reads the job back with GET …/summary every 1.5 s
// while it is queued or running, showing its phase and completed/total. When the POST's
// answer is lost (a timeout, a dropped connection: the server may have admitted the job
// all the same) the panel never POSTs again: it GETs until the server answers, and a job
// that was not there before the POST (or any active one) is the job it started — else
// nothing was started. Regenerate and Retry stay disabled while a job is active or a
// request is unresolved. A failed job shows its message and Retry.

import { api } from "./api.js";
import { announce, bytes, clear, formatTime, h, num, time } from "./dom.js";

export const POLL_MS = 1500;
const POST_TIMEOUT_MS = 10000;
const SLOW_QUEUE_MS = 20000;

const isActive = (job) => Boolean(job) && (job.state === "queued" || job.state === "running");

export function mountPanel(root, sessionId, { signal }) {
  const base = `/api/sessions/${encodeURIComponent(sessionId)}/summary`;
  let data = null; // the last summary GET's data
  let job = null; // the job shown: the GET's, or the POST's receipt
  let pending = false; // a POST is in flight, or its lost answer is being reconciled
  let refusal = ""; // why the server refused to start one (503, 409 …)
  let note = "";
  let timer = null;
  let stopped = false;
  let shownSummary;

  const regenerate = h("button", { type: "button", class: "primary", disabled: true }, "Regenerate");
  const retry = h("button", { type: "button", hidden: true, disabled: true }, "Retry");
  const statusText = h("span", { class: "status-text" }, "Loading the summary…");
  const bar = h("progress", { class: "idle", max: "1", value: "0", "aria-label": "Regeneration progress" });
  const noteLine = h("span", { class: "note" });
  const status = h("div", { class: "panel-status", role: "status", "aria-live": "polite" }, statusText, bar, noteLine);
  const problem = h("div", { class: "error-box", role: "alert", hidden: true });
  const updated = h("dd");
  const model = h("dd");
  const coverage = h("dd");
  const summary = h("div", { class: "panel-summary", "aria-label": "Summary" });
  clear(root).append(
    h("h2", { id: "panel-title" }, "Session Memory"),
    h("div", { class: "panel-actions" }, regenerate, retry),
    status, problem,
    h("dl", { class: "panel-meta" }, h("dt", null, "Updated"), updated, h("dt", null, "Model"), model, h("dt", null, "Coverage"), coverage),
    summary);

  const get = async () => (await api(base, { signal })).data;

  function schedule() {
    window.clearTimeout(timer);
    if (!stopped) timer = window.setTimeout(poll, POLL_MS);
  }

  function apply(fresh) {
    const was = job;
    data = fresh;
    job = fresh.job;
    if (was && isActive(was) && job && job.id === was.id && !isActive(job)) {
      announce(job.state === "completed" ? "Summary regenerated" : `Regeneration failed: ${job.error || ""}`);
    }
    paint();
  }

  async function poll() {
    try {
      apply(await get());
      if (note.startsWith("Connection lost")) note = "";
    } catch (error) {
      if (error.name === "AbortError" || stopped) return;
      note = "Connection lost — trying again every 1.5 s.";
      paint();
      schedule();
      return;
    }
    if (isActive(job)) schedule();
    else paint();
  }

  async function start() {
    if (pending || isActive(job) || !data) return;
    const before = job ? job.id : null;
    pending = true;
    refusal = "";
    note = "";
    paint();
    let receipt;
    try {
      receipt = await api(`${base}/regenerate`, { method: "POST", timeoutMs: POST_TIMEOUT_MS, signal });
    } catch (error) {
      if (error.name === "AbortError" || stopped) return;
      if (error.lost) {
        note = "The server's answer was lost; checking whether it started the regeneration…";
        paint();
        reconcile(before);
        return;
      }
      pending = false;
      refusal = `Could not start a regeneration: ${error.message}`;
      paint();
      return;
    }
    pending = false;
    job = receipt.data.job;
    paint();
    schedule();
  }

  /** The POST's answer never came: read back what the server did (never POST again). */
  async function reconcile(before) {
    for (;;) {
      let fresh;
      try {
        fresh = await get();
      } catch (error) {
        if (error.name === "AbortError" || stopped) return;
        note = "The server's answer was lost and it is not answering yet; checking again every 1.5 s…";
        paint();
        await new Promise((resolve) => { timer = window.setTimeout(resolve, POLL_MS); });
        if (stopped) return;
        continue;
      }
      pending = false;
      const started = fresh.job && (fresh.job.id !== before || isActive(fresh.job));
      note = started
        ? "The server's answer was lost; this is the regeneration it started."
        : "The request did not reach the server: nothing was started.";
      apply(fresh);
      if (isActive(job)) schedule();
      return;
    }
  }

  function statusLine() {
    if (!data) return "Loading the summary…";
    if (pending && !isActive(job)) return "Starting a regeneration…";
    if (!job) return "Regenerate rebuilds the summary from the whole conversation.";
    switch (job.state) {
      case "queued": {
        const waited = Date.now() - Date.parse(job.created_at || "");
        return waited > SLOW_QUEUE_MS
          ? "Queued — no worker has taken it yet (is one running? memoir serve --workers 1, or memoir worker)."
          : "Queued — waiting for a worker.";
      }
      case "running":
        if (job.stalled) {
          const age = Math.round(job.heartbeat_age_s || 0);
          return `Stalled — its worker has sent no heartbeat for ${num(age)} s and may have stopped; another worker takes it over once the claim expires.`;
        }
        if (job.phase === "episodes") return `Summarizing episodes: ${num(job.completed)} of ${num(job.total)}`;
        if (job.phase === "merge") return job.completed >= job.total ? "Saving the summary…" : "Merging the episodes into one summary…";
        return "Reading the conversation…";
      case "completed":
        return `Regenerated ${formatTime(job.finished_at)}.`;
      case "failed":
        return "The last regeneration failed.";
      default:
        return job.state;
    }
  }

  function paintProgress() {
    if (isActive(job) && job.state === "running" && job.total > 0) {
      bar.max = job.total;
      bar.value = Math.min(job.completed, job.total);
      bar.className = "";
    } else if (isActive(job) || pending) {
      bar.removeAttribute("value"); // indeterminate: queued, or the receipt not read yet
      bar.className = "";
    } else {
      bar.max = 1;
      bar.value = 0;
      bar.className = "idle";
    }
    bar.setAttribute("aria-valuetext", statusText.textContent);
  }

  function paintMeta() {
    clear(updated).append(data && data.updated_at ? time(data.updated_at) : "never");
    model.textContent = data && data.model ? data.model : "none yet";
    clear(coverage);
    const c = data && data.coverage;
    if (!c) {
      coverage.textContent = "nothing yet";
      return;
    }
    const amount = c.unit === "bytes" ? `${bytes(c.amount)} of ${bytes(c.current)} of the transcript` : `${num(c.amount)} of ${num(c.current)} events`;
    coverage.append(amount);
    if (c.last_exchange) coverage.append(", through ", time(c.last_exchange));
    if (c.amount < c.current) coverage.append(" ", h("span", { class: "badge" }, "newer events since"));
  }

  function paintSummary() {
    const text = data ? data.summary || "" : null;
    if (text === shownSummary) return; // unchanged: the text is not redrawn while polling
    shownSummary = text;
    clear(summary);
    if (text === null) return;
    if (!text) {
      summary.append(h("p", { class: "empty-note" }, "No summary yet. Regenerate writes one from the whole conversation."));
      return;
    }
    for (const para of text.split(/\n{2,}/)) if (para.trim()) summary.append(h("p", null, para.trim()));
  }

  function paint() {
    const busy = pending || isActive(job);
    root.setAttribute("aria-busy", busy ? "true" : "false");
    regenerate.disabled = !data || busy;
    const failed = Boolean(job) && job.state === "failed" && !busy;
    retry.hidden = !failed;
    retry.disabled = !failed;
    statusText.textContent = statusLine();
    noteLine.textContent = note;
    const message = failed ? job.error || "The job failed without a message." : refusal;
    problem.textContent = message;
    problem.hidden = !message;
    paintProgress();
    paintMeta();
    paintSummary();
  }

  regenerate.addEventListener("click", start);
  retry.addEventListener("click", start);

  (async () => {
    try {
      apply(await get());
    } catch (error) {
      if (error.name === "AbortError") return;
      statusText.textContent = "";
      problem.textContent = error.message;
      problem.hidden = false;
      return;
    }
    if (isActive(job)) schedule(); // reopened while a job runs: follow it
  })();

  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}
