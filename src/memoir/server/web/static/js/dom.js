// Building the page: every element is made with createElement and every piece of text
// goes in as a text node, so nothing a user or a transcript wrote is ever parsed as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function put(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "value" && "value" in node) node.value = value;
    else if (name === "checked" || name === "selected" || name === "disabled" || name === "hidden" || name === "open") node[name] = Boolean(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** h("a", {href, class}, "text", child…): an element with attributes and children. */
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  put(node, attrs);
  append(node, children);
  return node;
}

/** svg("rect", {x, y}): an SVG element (the usage chart). */
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

/** Replace a node's children (strings become text; null and false are left out). */
export function fill(node, ...children) {
  clear(node);
  append(node, children);
  return node;
}

/** Tell screen readers something that changed without moving focus. */
export function announce(message) {
  const box = document.getElementById("announcer");
  if (!box) return;
  box.textContent = "";
  window.setTimeout(() => { box.textContent = message; }, 30);
}

const numberFormat = new Intl.NumberFormat();
export const num = (n) => numberFormat.format(n || 0);

export function bytes(n) {
  if (n < 1024) return `${num(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

const full = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dayOnly = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });
const utcDay = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function formatTime(iso) {
  if (!iso) return "";
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : full.format(at);
}

/** A day: an instant's local date, or a bare YYYY-MM-DD (a UTC day: usage totals, a
 * memory's dates) as the day it names, whatever the reader's time zone. */
export function formatDay(iso) {
  if (!iso) return "";
  const bare = /^\d{4}-\d{2}-\d{2}$/.test(iso);
  const at = new Date(bare ? `${iso}T00:00:00Z` : iso);
  if (Number.isNaN(at.getTime())) return iso;
  return (bare ? utcDay : dayOnly).format(at);
}

const UNITS = [["year", 31557600], ["month", 2629800], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];

/** "3 hours ago", "yesterday" … */
export function ago(iso) {
  const at = Date.parse(iso || "");
  if (Number.isNaN(at)) return "";
  const seconds = (at - Date.now()) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === "second") return relative.format(Math.round(seconds / size), unit);
  }
  return "";
}

/** A <time> element: the local date and time, the ISO instant as its machine value. */
export function time(iso, { text } = {}) {
  if (!iso) return h("span", { class: "muted" }, "unknown");
  return h("time", { datetime: iso, title: formatTime(iso) }, text !== undefined ? text : formatTime(iso));
}

/** Plain text with ``` fences shown as code blocks; everything else as written. */
export function richText(text) {
  const parts = String(text || "").split(/```[^\n]*\n?/);
  return parts.map((part, i) => (i % 2 === 1
    ? h("pre", null, h("code", null, part.replace(/\n$/, "")))
    : (part.trim() ? h("p", { class: "text" }, part.replace(/^\n+|\n+$/g, "")) : null)));
}

/** A session's path, and a link to one of its exchanges (the `#x-ORDINAL` anchors). */
export function sessionPath(sessionId) {
  return `/sessions/${encodeURIComponent(sessionId)}`;
}

export function exchangeOrdinal(exchangeId) {
  const tail = String(exchangeId || "").split(":").pop();
  return /^\d+$/.test(tail) ? Number(tail) : null;
}

export function exchangeHref(sessionId, exchangeId, ordinal) {
  const first = exchangeOrdinal(exchangeId);
  if (first !== null) return `${sessionPath(sessionId)}#x-${first}`;
  return ordinal ? `${sessionPath(sessionId)}#e-${ordinal}` : sessionPath(sessionId);
}

/** An <option> list; `selected` is the value chosen. */
export function options(pairs, selected) {
  return pairs.map(([value, label]) => h("option", { value, selected: value === (selected || "") }, label));
}

export function errorBox(error) {
  return h("div", { class: "error-box", role: "alert" }, error && error.message ? error.message : String(error));
}
