// Usage: the model calls made for the caller — calls, failures and tokens by day and model,
// a bar chart (inline SVG, stacked by model, failures marked) and the table behind it.

import { api } from "./api.js";
import { clear, errorBox, fill, formatDay, h, num, options, svg } from "./dom.js";

const PERIODS = [["7", "Last 7 days"], ["30", "Last 30 days"], ["90", "Last 90 days"], ["0", "All time"]];
const MAX_BARS = 90;
const SERIES = 6;

export function usageView(main, { query, signal }) {
  document.title = "Usage · Memoir";
  let period = PERIODS.some(([v]) => v === query.get("days")) ? query.get("days") : "30";
  let metric = query.get("metric") === "tokens" ? "tokens" : "calls";
  const select = h("select", { name: "days" }, options(PERIODS, period));
  const tiles = h("div", { class: "tiles" });
  const chartBox = h("div");
  const legend = h("ul", { class: "legend", "aria-label": "Models" });
  const radios = ["calls", "tokens"].map((m) => h("input", { type: "radio", name: "metric", value: m, checked: m === metric }));
  const chartCard = h("section", { class: "chart-card", "aria-labelledby": "chart-title" },
    h("div", { class: "chart-head" },
      h("h2", { id: "chart-title" }, "By day"),
      h("fieldset", null, h("legend", { class: "sr-only" }, "Show"),
        h("label", null, radios[0], "Calls"), h("label", null, radios[1], "Tokens"))),
    chartBox, legend);
  const table = h("div", { class: "table-wrap" });
  const problem = h("div");
  main.append(h("h1", { tabindex: "-1" }, "Usage"),
    h("form", { class: "filters", "aria-label": "Period" }, h("label", null, "Period", select)),
    problem, tiles, chartCard, h("h2", null, "By day and model"), table);

  let data = null;
  let drawnWidth = 0;
  const resized = new ResizeObserver(() => {
    if (data && Math.abs(chartBox.clientWidth - drawnWidth) > 8) draw();
  });
  resized.observe(chartBox);

  function remember() {
    window.history.replaceState(null, "", `/usage?days=${period}${metric === "tokens" ? "&metric=tokens" : ""}`);
  }

  function draw() {
    if (!data) return;
    clear(tiles).append(
      tile("Calls", num(data.calls)),
      tile("Failed calls", num(data.failed || 0)),
      tile("Input tokens", num(data.input_tokens)),
      tile("Output tokens", num(data.output_tokens)));
    const rows = data.totals;
    clear(chartBox);
    clear(legend);
    clear(table);
    if (!rows.length) {
      chartBox.append(h("p", { class: "empty" }, "No model calls in this period."));
      table.append(h("p", { class: "empty" }, "Summaries, compaction and memory extraction record every call they make here."));
      return;
    }
    const models = rankModels(rows);
    drawnWidth = chartBox.clientWidth;
    chartBox.append(chart(rows, models, metric, Number(period), drawnWidth));
    fill(legend, models.map((m, i) => h("li", null, h("span", { class: `swatch series-${i % SERIES}` }), m)),
      rows.some((r) => r.failed) ? h("li", null, h("span", { class: "swatch fail" }), "a day with failed calls") : null);
    table.append(h("table", null,
      h("thead", null, h("tr", null, ["Day", "Model"].map((t) => h("th", { scope: "col" }, t)),
        ["Calls", "Failed", "Input tokens", "Output tokens"].map((t) => h("th", { scope: "col", class: "num" }, t)))),
      h("tbody", null, [...rows].reverse().map((r) => h("tr", null,
        h("td", null, h("time", { datetime: r.day }, formatDay(r.day))),
        h("td", null, r.model),
        h("td", { class: "num" }, num(r.calls)),
        h("td", { class: ["num", r.failed ? "failed" : ""] }, num(r.failed)),
        h("td", { class: "num" }, num(r.input_tokens)),
        h("td", { class: "num" }, num(r.output_tokens)))))));
  }

  async function load() {
    clear(problem);
    try {
      data = (await api(`/api/usage?days=${period}`, { signal })).data;
      draw();
    } catch (error) {
      if (error.name === "AbortError") return;
      problem.append(errorBox(error));
    }
  }

  select.addEventListener("change", () => { period = select.value; remember(); load(); });
  for (const radio of radios) radio.addEventListener("change", () => { metric = radio.value; remember(); draw(); });
  load();
  return () => resized.disconnect();
}

function tile(label, value) {
  return h("div", { class: "tile" }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

function rankModels(rows) {
  const total = new Map();
  for (const r of rows) total.set(r.model, (total.get(r.model) || 0) + r.calls);
  return [...total.keys()].sort((a, b) => total.get(b) - total.get(a) || a.localeCompare(b));
}

/** The days the chart shows (UTC, as the totals are): the period asked for up to today,
 * or for all time the first day with calls to the last; at most MAX_BARS of them. */
function days(first, last, period) {
  const out = [];
  const today = new Date().toISOString().slice(0, 10);
  const end = Date.parse(`${period ? (last > today ? last : today) : last}T00:00:00Z`);
  const start = period ? end - (period - 1) * 86400000 : Date.parse(`${first}T00:00:00Z`);
  for (let t = start; t <= end; t += 86400000) out.push(new Date(t).toISOString().slice(0, 10));
  return out.slice(-MAX_BARS);
}

function niceMax(value) {
  if (value <= 4) return Math.max(1, Math.ceil(value));
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((s) => s * power * 4 >= value);
  return step * power * 4;
}

function short(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k`;
  return String(Math.round(n * 10) / 10);
}

/** Bars per day stacked by model (calls or tokens), a red dot over days with failures. */
function chart(rows, models, metric, period, width) {
  const value = (r) => (metric === "tokens" ? r.input_tokens + r.output_tokens : r.calls);
  const sorted = [...rows].sort((a, b) => a.day.localeCompare(b.day));
  const axis = days(sorted[0].day, sorted[sorted.length - 1].day, period);
  const byDay = new Map(axis.map((d) => [d, []]));
  for (const r of sorted) if (byDay.has(r.day)) byDay.get(r.day).push(r);
  const totals = axis.map((d) => byDay.get(d).reduce((s, r) => s + value(r), 0));
  const top = niceMax(Math.max(...totals));
  const W = Math.max(280, Math.round(width || 720)); // drawn at its width: text stays legible
  const H = 230;
  const left = 44;
  const bottom = 26;
  const plotH = H - bottom - 14;
  const slot = (W - left - 8) / axis.length;
  const barW = Math.max(2, Math.min(28, slot * 0.7));
  const y = (v) => 14 + plotH - (v / top) * plotH;
  const parts = [];
  for (let i = 0; i <= 4; i++) {
    const v = (top / 4) * i;
    parts.push(svg("line", { class: i ? "grid" : "axis", x1: left, x2: W - 4, y1: y(v), y2: y(v) }),
      svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, short(v)));
  }
  const labelEvery = Math.max(1, Math.ceil(axis.length / Math.max(2, Math.floor(W / 90))));
  axis.forEach((day, i) => {
    const x = left + slot * i + (slot - barW) / 2;
    let base = 0;
    const entries = byDay.get(day);
    for (const r of [...entries].sort((a, b) => models.indexOf(a.model) - models.indexOf(b.model))) {
      const v = value(r);
      if (!v) continue;
      const series = models.indexOf(r.model) % SERIES;
      parts.push(svg("rect", { class: `bar series-${series}`, x, width: barW, y: y(base + v), height: Math.max(1, y(base) - y(base + v)), rx: 1.5 },
        svg("title", null, `${day} · ${r.model}: ${num(r.calls)} calls (${num(r.failed)} failed), ${num(r.input_tokens)} in / ${num(r.output_tokens)} out tokens`)));
      base += v;
    }
    const failed = entries.reduce((s, r) => s + r.failed, 0);
    if (failed) {
      parts.push(svg("circle", { class: "fail-dot", cx: x + barW / 2, cy: Math.max(6, y(base) - 7), r: 3.5 },
        svg("title", null, `${day}: ${num(failed)} failed ${failed === 1 ? "call" : "calls"}`)));
    }
    if ((axis.length - 1 - i) % labelEvery === 0) {
      const at = left + slot * i + slot / 2;
      const end = at > W - 22; // the last label stays inside the chart
      parts.push(svg("text", { x: end ? W - 2 : at, y: H - 8, "text-anchor": end ? "end" : "middle" }, day.slice(5)));
    }
  });
  const sum = totals.reduce((a, b) => a + b, 0);
  return svg("svg", {
    class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", preserveAspectRatio: "xMidYMid meet",
    "aria-label": `${metric === "tokens" ? "Tokens" : "Calls"} per day, ${axis[0]} to ${axis[axis.length - 1]}: ${num(sum)} in all`,
  }, parts);
}
