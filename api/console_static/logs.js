// A job's stdout or stderr, live: read by offset from GET /api/jobs/{id}/logs until the API says it ended.
//
// Each read starts where the last one stopped (nextOffset), so nothing shows twice; the text is the
// API's (whole lines, redacted) and goes in as text only. The viewer polls by itself while it is on
// the page, and stops when it ended or the page is left.

import { api, ApiError } from "./api.js";
import { h } from "./dom.js";

const POLL_MS = 1500;
const SOON_MS = 50; // a read that brought text may have more behind it
const MAX_CHARS = 1_000_000; // what the page keeps of a long log: its end

/** The viewer of job ``id``'s output: ``element`` to put on the page, ``start()`` once it is there. */
export function logViewer(id) {
  let stream = "stdout";
  let offset = 0;
  let run = 0; // bumps when the stream changes: an older loop stops by itself
  // A log region (named, so it can be found), not a live one: the status line says what changed.
  const text = h("pre", { class: "log", id: "job-log", role: "log", "aria-live": "off", tabindex: "0", "aria-label": "Job output" });
  const status = h("p", { class: "muted", id: "job-log-status", role: "status", text: "Waiting for output…" });
  const choices = ["stdout", "stderr"].map((name) => {
    const input = h("input", { type: "radio", name: "log-stream", id: `log-${name}`, value: name, checked: name === stream });
    input.addEventListener("change", () => choose(name));
    return h("label", { for: `log-${name}` }, input, ` ${name}`);
  });
  const element = h("section", { class: "job-log", "aria-labelledby": "job-log-title" },
    h("h2", { id: "job-log-title", text: "Output" }),
    h("fieldset", { class: "log-streams" }, h("legend", { class: "sr-only", text: "Stream" }), ...choices),
    status, text);

  function choose(name) {
    stream = name;
    offset = 0;
    text.textContent = "";
    status.textContent = "Waiting for output…";
    run += 1;
    follow(run);
  }

  async function follow(mine) {
    let wait = POLL_MS;
    try {
      const part = await api(`jobs/${encodeURIComponent(id)}/logs?stream=${stream}&offset=${offset}`);
      if (mine !== run) return;
      if (part.text) {
        const shown = text.textContent + part.text;
        text.textContent = shown.length > MAX_CHARS ? shown.slice(-MAX_CHARS) : shown;
        wait = SOON_MS;
      }
      offset = part.nextOffset;
      if (part.ended) {
        status.textContent = offset ? `The job ${part.state}; its ${stream} ends here.` : `The job ${part.state} without writing to ${stream}.`;
        return;
      }
      status.textContent = offset ? `Following ${stream} (${part.state})…` : `No ${stream} yet (${part.state}).`;
    } catch (error) {
      if (mine !== run) return;
      status.textContent = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error.message || error);
    }
    if (mine === run && element.isConnected) setTimeout(() => follow(mine), wait);
  }

  /** Begin following (once: later calls do nothing); call it when ``element`` is on the page. */
  function start() {
    if (run === 0) choose(stream);
  }

  return { element, start };
}
