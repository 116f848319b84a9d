// The jobs of a project, one job, and the backends: each page polls while something it shows can change.

import { api, ApiError } from "./api.js";
import { timeline } from "./charts.js";
import { costText } from "./costs.js";
import { dependencies, groupLink } from "./groups.js";
import { announce, confirmAction, formatBytes, formatTime, h, safeUrl, TERMINAL } from "./dom.js";
import { logViewer } from "./logs.js";
import { pictures } from "./pictures.js";

const PAGE_SIZE = 50;
const POLL_MS = 1500;
const QUIET_POLL_MS = 5000;

function jobLink(id) {
  return h("a", { href: `#/job/${encodeURIComponent(id)}`, text: id });
}

function stateBadge(state) {
  return h("span", { class: `badge state-${state}`, text: state });
}

function labelsText(labels) {
  return Object.entries(labels || {}).map(([key, value]) => `${key}=${value}`).join(", ");
}

function problemText(error) {
  return error instanceof ApiError ? `${error.status}: ${error.message}` : String(error.message || error);
}

/** Jobs of a project, newest first, with a state filter and paging by continuation token. */
export async function jobsPage(main, query, ctx) {
  const project = query.get("project") || "demo";
  const state = query.get("state") || "";
  const group = query.get("group") || ""; // a group's items, in item order (the API lists them by groupId)
  const states = ["", "queued", "submitting", "running", "postprocessing", "cancel_requested", "succeeded", "failed", "cancelled"];
  const tokens = [null]; // tokens[i] fetches page i
  let page = 0;
  let lastDrawn = "";

  const projectInput = h("input", { id: "jobs-project", name: "project", type: "text", value: project });
  const groupInput = h("input", { id: "jobs-group", name: "group", type: "text", value: group, placeholder: "any group" });
  const stateSelect = h("select", { id: "jobs-state", name: "state" }, states.map((name) => h("option", { value: name, selected: name === state, text: name || "any state" })));
  const filters = h("form", { class: "filters", "aria-label": "Filter jobs" },
    h("label", { for: "jobs-project", text: "Project" }), projectInput,
    h("label", { for: "jobs-state", text: "State" }), stateSelect,
    h("label", { for: "jobs-group", text: "Group" }), groupInput,
    h("button", { type: "submit", text: "Show" }));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams({ project: projectInput.value.trim() });
    if (stateSelect.value) next.set("state", stateSelect.value);
    if (groupInput.value.trim()) next.set("group", groupInput.value.trim());
    ctx.navigate(`#/jobs?${next}`);
  });
  const body = h("tbody");
  const table = h("table", { class: "jobs" },
    h("caption", { class: "sr-only", text: `Jobs of project ${project}` }),
    h("thead", {}, h("tr", {}, ["created", "job", "workload", "state", "backend", "labels", "last event"].map((name) => h("th", { scope: "col", text: name })))),
    body);
  const previous = h("button", { type: "button", id: "page-previous", text: "← Newer" });
  const next = h("button", { type: "button", id: "page-next", text: "Older →" });
  const where = h("span", { class: "muted", id: "page-where" });
  previous.disabled = next.disabled = true; // until the first page has loaded
  const message = h("p", { class: "problem", role: "alert", hidden: true });
  const title = group ? h("h1", {}, "Items of group ", groupLink(group)) : h("h1", { text: `Jobs of ${project}` });
  main.replaceChildren(title, filters, message, h("div", { class: "scroll" }, table), h("nav", { class: "pager", "aria-label": "Pages" }, previous, where, next));

  async function load() {
    const at = page;
    const params = new URLSearchParams(group ? { groupId: group } : { projectId: project });
    params.set("pageSize", String(PAGE_SIZE));
    if (state) params.set("state", state);
    if (tokens[at]) params.set("continuationToken", tokens[at]);
    let result;
    try {
      result = await api(`jobs?${params}`);
    } catch (error) {
      if (at !== page) return true;
      message.hidden = false;
      message.textContent = problemText(error);
      previous.disabled = at === 0;
      return true;
    }
    if (at !== page) return true; // the user has turned the page since: the load for that page draws it
    message.hidden = true;
    tokens[at + 1] = result.continuationToken;
    // Redraw only what changed, so a poll does not take the keyboard focus away from a row's link.
    if (group && state) result.items = result.items.filter((job) => job.state === state); // groupId lists ignore state
    const drawn = JSON.stringify(result.items);
    const again = result.items.every((job) => TERMINAL.has(job.state)) ? (page === 0 ? QUIET_POLL_MS : true) : false;
    if (drawn === lastDrawn) return again;
    lastDrawn = drawn;
    body.replaceChildren(...result.items.map((job) => h("tr", { "data-job": job.id },
      h("td", { text: formatTime(job.createdAt) }),
      h("td", {}, jobLink(job.id)),
      h("td", { text: job.workload }),
      h("td", {}, stateBadge(job.state)),
      h("td", { text: job.backend || job.requestedBackend || "" }),
      h("td", { class: "labels", text: labelsText(job.labels) }),
      h("td", { class: "message", text: job.lastEvent ? job.lastEvent.message : "" }))));
    if (!result.items.length) body.append(h("tr", {}, h("td", { colspan: 7, class: "muted", text: "No jobs." })));
    previous.disabled = page === 0;
    next.disabled = !result.continuationToken;
    where.textContent = `page ${page + 1}, ${result.items.length} job(s)`;
    // Running jobs: every POLL_MS. All finished: the newest page still looks for new jobs, less often.
    return again;
  }
  // A page's token is known once the page before it has loaded: both buttons wait for the load.
  function turn(by) {
    page += by;
    lastDrawn = "";
    previous.disabled = next.disabled = true;
    ctx.refresh();
  }
  previous.addEventListener("click", () => turn(-1));
  next.addEventListener("click", () => turn(1));
  ctx.poll(load, POLL_MS);
}

async function cancel(job, ctx) {
  if (!(await confirmAction(`Cancel job ${job.id} (${job.workload})? Work in progress is lost.`, "Cancel the job"))) return;
  try {
    await api(`jobs/${encodeURIComponent(job.id)}/cancel`, { method: "POST" });
    announce(`Cancellation of ${job.id} requested`);
  } catch (error) {
    announce(problemText(error));
  }
  ctx.refresh();
}

/** Run a failed or cancelled job again (a new job, same request); one key per page, so a double click makes one. */
async function retry(job, ctx, key) {
  try {
    const created = await api(`jobs/${encodeURIComponent(job.id)}/retry`, { method: "POST", headers: { "Idempotency-Key": key } });
    announce(`Job ${job.id} retried as ${created.id}`);
    ctx.navigate(`#/job/${encodeURIComponent(created.id)}`);
  } catch (error) {
    announce(problemText(error));
  }
}

function outputsTable(job) {
  if (!job.outputs || !job.outputs.length) return h("p", { class: "muted", text: "No outputs yet." });
  return h("div", { class: "scroll" }, h("table", { class: "outputs" },
    h("thead", {}, h("tr", {}, ["output", "size", ""].map((name) => h("th", { scope: "col", text: name })))),
    h("tbody", {}, job.outputs.map((item) => {
      const url = item.url ? safeUrl(item.url) : null;
      return h("tr", {}, h("td", { text: item.name }), h("td", { class: "num", text: formatBytes(item.size) }),
        h("td", {}, url ? h("a", { href: url, download: item.name.split("/").pop(), rel: "noreferrer", text: "download" }) : ""));
    }))));
}

function historyTable(history) {
  return h("div", { class: "scroll" }, h("table", { class: "history" },
    h("thead", {}, h("tr", {}, ["at", "state", "source", "message"].map((name) => h("th", { scope: "col", text: name })))),
    h("tbody", {}, history.map((event) => h("tr", { class: event.source === "workload" ? "progress" : "" },
      h("td", { text: formatTime(event.at) }), h("td", {}, stateBadge(event.state)), h("td", { text: event.source }), h("td", { text: event.message }))))));
}

async function followOns(job) {
  const found = [];
  let token = null;
  for (let i = 0; i < 3; i += 1) {
    const params = new URLSearchParams({ projectId: job.projectId, pageSize: "200" });
    if (token) params.set("continuationToken", token);
    const page = await api(`jobs?${params}`);
    found.push(...page.items.filter((item) => item.parentJobId === job.id));
    token = page.continuationToken;
    if (!token) break;
  }
  return found;
}

/** One job: header, failure reason, timeline, history, outputs, pictures, parent and follow-ons. */
export async function jobPage(main, id, ctx) {
  let drawnPictures = false;
  let lastDrawn = "";
  const retryKey = `console-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const children = h("ul", { class: "follow-ons" });
  const pictureBox = h("section", { class: "pictures", "aria-labelledby": "pictures-title" });
  const output = logViewer(id); // follows the job's stdout or stderr by itself (logs.js)
  async function load() {
    let job;
    try {
      job = await api(`jobs/${encodeURIComponent(id)}?readUrls=true`);
    } catch (error) {
      main.replaceChildren(h("h1", { text: `Job ${id}` }), h("p", { class: "problem", role: "alert", text: problemText(error) }));
      return true;
    }
    const done = TERMINAL.has(job.state);
    const facts = h("dl", { class: "facts" },
      ...[["project", job.projectId], ["workload", job.workload], ["backend", job.backend || job.requestedBackend || ""], ["profile", job.profile || "default"], ["created", formatTime(job.createdAt)], ["finished", formatTime(job.finishedAt)], ["labels", labelsText(job.labels)], ["submitted by", job.submittedBy ? job.submittedBy.name : ""], ["cost", costText(job.cost)]]
        .flatMap(([term, value]) => [h("dt", { text: term }), h("dd", { text: value || "–" })]));
    const parent = job.parentJobId ? h("p", {}, "Started by ", jobLink(job.parentJobId)) : null;
    const retryOf = job.retryOf ? h("p", { id: "retry-of" }, "Retry of ", jobLink(job.retryOf)) : null;
    const retries = job.retries && job.retries.length ? h("p", { id: "retries" }, "Retried as ", ...job.retries.flatMap((item, i) => [i ? ", " : "", jobLink(item)])) : null;
    const actions = h("div", { class: "actions" });
    if (!done && job.state !== "cancel_requested") {
      const button = h("button", { type: "button", class: "danger", id: "cancel-job", text: "Cancel job…" });
      button.addEventListener("click", () => cancel(job, ctx));
      actions.append(button);
    }
    if (job.state === "failed" || job.state === "cancelled") {
      const button = h("button", { type: "button", id: "retry-job", text: "Retry job" });
      button.addEventListener("click", () => retry(job, ctx, retryKey));
      actions.append(button);
    }
    if (job.state === "succeeded") actions.append(h("a", { class: "button", href: `#/submit?workload=inference&project=${encodeURIComponent(job.projectId)}&inputJob=${encodeURIComponent(job.id)}`, text: "Use as input…" }));
    const reason = job.state === "failed" || job.state === "cancelled" ? h("p", { class: "problem", role: "alert", id: "job-reason", text: job.reason || (job.lastError ? job.lastError : "No reason recorded") }) : null;
    const progress = typeof job.progress === "number" && !done ? h("p", { class: "muted", id: "job-progress", text: `Progress: ${Math.round(job.progress * 100)}%` }) : null;
    // Redraw only when the job changed (read URLs are signed anew on every read, so they do not count),
    // and keep the keyboard focus where it was (the cancel button, say), by element id.
    const drawn = JSON.stringify(job, (key, value) => (key === "url" || key === "readUrlsExpireAt" ? undefined : value));
    if (drawn !== lastDrawn) {
      lastDrawn = drawn;
      const focused = document.activeElement && document.activeElement.id;
      main.replaceChildren(...[
        h("h1", {}, `Job ${job.id} `, stateBadge(job.state)),
        facts, parent, retryOf, retries, reason, progress, actions, dependencies(job),
        h("h2", { text: "Timeline" }), timeline(job.history || []),
        h("details", {}, h("summary", { text: `Status history (${(job.history || []).length} events${job.historyFolded ? `, ${job.historyFolded} folded` : ""})` }), historyTable(job.history || [])),
        output.element,
        h("h2", { text: "Outputs" }), outputsTable(job),
        h("h2", { id: "pictures-title", text: "Pictures" }), pictureBox,
        h("h2", { text: "Follow-on jobs" }), children].filter(Boolean));
      if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
      output.start(); // once it is on the page (later calls do nothing)
    }
    if (done && !drawnPictures) {
      drawnPictures = true;
      const figures = await pictures(job);
      pictureBox.replaceChildren(...(figures.length ? figures : [h("p", { class: "muted", text: "No pictures for this job." })]));
    } else if (!done) {
      pictureBox.replaceChildren(h("p", { class: "muted", text: "Pictures appear when the job has succeeded." }));
    }
    try {
      const found = await followOns(job);
      children.replaceChildren(...(found.length ? found.map((item) => h("li", {}, jobLink(item.id), ` ${item.workload} `, stateBadge(item.state))) : [h("li", { class: "muted", text: "None." })]));
      return done && found.every((item) => TERMINAL.has(item.state));
    } catch (error) {
      children.replaceChildren(h("li", { class: "problem", text: problemText(error) }));
      return done;
    }
  }
  main.replaceChildren(h("h1", { text: `Job ${id}` }), h("p", { class: "muted", text: "Loading…" }));
  ctx.poll(load, POLL_MS);
}

/** How long the oldest job has waited for compute, for the backends table ("–": none waits). */
function waitText(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return seconds < 120 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`;
}

/** The backends the app may route to, what each takes, why the others are off, and each one's queue. */
export async function backendsPage(main) {
  let data;
  try {
    data = await api("backends");
  } catch (error) {
    main.replaceChildren(h("h1", { text: "Backends" }), h("p", { class: "problem", role: "alert", text: problemText(error) }));
    return;
  }
  main.replaceChildren(
    h("h1", { text: "Backends" }),
    h("p", { text: `Default: ${data.default}` }),
    h("table", { class: "backends" },
      h("thead", {}, h("tr", {}, ["backend", "workloads", "weight", "auto", "waiting", "oldest wait", "last capacity reason", "unavailable"]
        .map((name) => h("th", { scope: "col", text: name })))),
      h("tbody", {}, data.backends.map((item) => h("tr", {},
        h("td", { text: item.name }), h("td", { text: item.workloads.join(", ") || item.takesNothingBecause || "none" }), h("td", { class: "num", text: String(item.weight) }),
        h("td", { text: item.autoRoutes ? "yes" : "no" }),
        h("td", { class: "num", text: String(item.capacity.waiting) }),
        h("td", { class: "num", text: waitText(item.capacity.oldestWaitS) }),
        h("td", { text: item.capacity.lastReason ? `${item.capacity.lastReason} (${formatTime(item.capacity.lastReasonAt)})` : "–" }),
        h("td", { text: Object.entries(item.unavailable).map(([k, v]) => `${k}: ${v}`).join("; ") || "–" }))))),
    h("h2", { text: "Disabled" }),
    h("ul", {}, data.disabled.map((item) => h("li", { text: `${item.name}: ${item.reason}` }))));
}
