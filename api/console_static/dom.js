// Building the page from API data: every value goes in as text, never as markup (no innerHTML anywhere).

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element; string children become text nodes. */
export function h(tag, attrs = {}, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element (charts are drawn with attributes and classes, never style attributes). */
export function s(tag, attrs = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** A URL from the API, only if it is http(s): a javascript: URL in data never becomes a link. */
export function safeUrl(value) {
  try {
    const url = new URL(String(value), location.href);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

export function formatBytes(size) {
  if (typeof size !== "number") return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${size} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function announce(message) {
  const status = document.getElementById("status");
  if (status) status.textContent = message;
}

/** Ask before something irreversible; resolves true only on an explicit yes (Escape or "Keep it" say no). */
export function confirmAction(text, yesLabel) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-yes").textContent = yesLabel;
  const opener = document.activeElement && document.activeElement.id;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      // A poll may have redrawn the page while the dialog was open: the browser then returns the focus to a
      // control that is gone. Give it to the one that opened the dialog, found again by its id.
      const lost = !document.activeElement || document.activeElement === document.body;
      if (opener && lost && document.getElementById(opener)) document.getElementById(opener).focus();
      resolve(dialog.returnValue === "ok");
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    document.getElementById("confirm-no").focus();
  });
}

export const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
