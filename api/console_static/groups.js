// Job groups (docs/adr/0040): a group's page (progress, counts by state, items ended over time, the failed
// items with their causes, cancel and retry), and the dependencies a job page shows (what it waits for,
// what waits for it).

import { api, ApiError } from "./api.js";
import { completions } from "./charts.js";
import { costText } from "./costs.js";
import { announce, confirmAction, formatTime, h } from "./dom.js";

const POLL_MS = 1500;
const COUNT_STATES = ["queued", "running", "succeeded", "failed", "cancelled", "notMade"];
const CHART_PAGES = 10; // items read for the chart: at most 10 pages of 200 (the first 2,000 items)
const PAGE = 200;

function problemText(error) {
  return error instanceof ApiError ? `${error.status}: ${error.message}` : String(error.message || error);
}

function badge(state) {
  return h("span", { class: `badge state-${state}`, text: state });
}

/** A group id (``g…``, no dash) links to its page; anything else is a job. */
export function isGroupId(id) {
  return /^g[0-9a-z]+$/.test(id);
}

export function groupLink(id) {
  return h("a", { href: `#/groups/${encodeURIComponent(id)}`, text: id });
}

function refLink(id) {
  return isGroupId(id) ? h("span", {}, "group ", groupLink(id)) : h("span", {}, "job ", h("a", { href: `#/job/${encodeURIComponent(id)}`, text: id }));
}

/** What the group's ended items cost so far (issue 41): final, or so far, with the unpriced ones named apart. */
export function groupCostText(cost) {
  if (!cost) return "";
  const unpriced = cost.unpricedItems ? `; ${cost.unpricedItems} item(s) with no known price, not included` : "";
  if (cost.amount === null || cost.amount === undefined) return cost.unpricedItems ? `unknown${unpriced}` : "";
  const sofar = cost.final ? "" : ` so far (${cost.endedItems} items ended)`;
  return `${costText({ amount: cost.amount, currency: cost.currency })}${sofar}${unpriced}`;
}

function ended(counts) {
  return counts.succeeded + counts.failed + counts.cancelled;
}

/** The ends of the group's items (finishedAt and state), from its first pages of items. */
async function itemEnds(id) {
  const ends = [];
  let token = null;
  let read = 0;
  for (let page = 0; page < CHART_PAGES; page += 1) {
    const params = new URLSearchParams({ groupId: id, pageSize: String(PAGE) });
    if (token) params.set("continuationToken", token);
    const answer = await api(`jobs?${params}`);
    read += answer.items.length;
    for (const job of answer.items) if (job.finishedAt) ends.push({ at: job.finishedAt, state: job.state });
    token = answer.continuationToken;
    if (!token) break;
  }
  return { ends, read, partial: Boolean(token) };
}

function countsTable(group) {
  return h("div", { class: "scroll" }, h("table", { class: "counts", id: "group-counts" },
    h("caption", { class: "sr-only", text: `Items of group ${group.id} by state` }),
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "state" }), h("th", { scope: "col", text: "items" }))),
    h("tbody", {}, COUNT_STATES.map((state) => h("tr", { "data-state": state },
      h("th", { scope: "row" }, state === "notMade" ? "not made yet" : badge(state)),
      h("td", { class: "num", text: String(group.counts[state] || 0) }))))));
}

function failuresTable(group) {
  if (!group.failures.length) return h("p", { class: "muted", id: "group-failures-none", text: "No item failed or was cancelled." });
  const more = group.counts.failed + group.counts.cancelled - group.failures.length;
  return h("div", {},
    h("div", { class: "scroll" }, h("table", { class: "failures", id: "group-failures" },
      h("caption", { class: "sr-only", text: "Failed and cancelled items with their causes" }),
      h("thead", {}, h("tr", {}, ["item", "job", "state", "cause"].map((name) => h("th", { scope: "col", text: name })))),
      h("tbody", {}, group.failures.map((item) => h("tr", {},
        h("td", { class: "num", text: String(item.index) }),
        h("td", {}, h("a", { href: `#/job/${encodeURIComponent(item.jobId)}`, text: item.jobId })),
        h("td", {}, badge(item.state)),
        h("td", { class: "message", text: item.reason || "No reason recorded" })))))),
    more > 0 ? h("p", { class: "muted", text: `${more} more not listed here: the jobs list of the group shows every item.` }) : null);
}

async function cancelGroup(group, ctx) {
  const open = group.itemCount - ended(group.counts);
  if (!(await confirmAction(`Cancel group ${group.id}? Its ${open} queued, running and unmade items are cancelled; work in progress is lost.`, "Cancel the group"))) return;
  try {
    await api(`groups/${encodeURIComponent(group.id)}/cancel`, { method: "POST" });
    announce(`Cancellation of group ${group.id} requested`);
  } catch (error) {
    announce(problemText(error));
  }
  ctx.refresh();
}

async function retryGroup(group, ctx) {
  try {
    const retried = await api(`groups/${encodeURIComponent(group.id)}/retry`, { method: "POST" });
    announce(`Group ${group.id}: ${retried.retried} item(s) made again`);
  } catch (error) {
    announce(problemText(error));
  }
  ctx.refresh();
}

/** One group: progress, counts by state, items ended over time, failures with causes, cancel and retry. */
export async function groupPage(main, id, ctx) {
  let lastDrawn = "";
  let chartFor = -1; // the ended count the chart was drawn for: items are read again only when it changed
  const chartBox = h("div", { id: "group-chart" });
  async function load() {
    let group;
    try {
      group = await api(`groups/${encodeURIComponent(id)}`);
    } catch (error) {
      main.replaceChildren(h("h1", { text: `Group ${id}` }), h("p", { class: "problem", role: "alert", text: problemText(error) }));
      return true;
    }
    const done = group.state === "completed";
    const drawn = JSON.stringify(group);
    if (drawn !== lastDrawn) {
      lastDrawn = drawn;
      const count = ended(group.counts);
      const percent = Math.round(group.progress * 100);
      const facts = h("dl", { class: "facts" },
        ...[["project", group.projectId], ["workload", group.workload], ["items", String(group.itemCount)], ["made into jobs", `${group.made} of ${group.itemCount}`],
          ["created", formatTime(group.createdAt)], ["all made", formatTime(group.madeAt)], ["completed", formatTime(group.completedAt)], ["submitted by", group.submittedBy ? group.submittedBy.name : ""], ["cost", groupCostText(group.cost)]]
          .flatMap(([term, value]) => [h("dt", { text: term }), h("dd", { text: value || "–" })]));
      const actions = h("div", { class: "actions" });
      if (group.state === "open") {
        const button = h("button", { type: "button", class: "danger", id: "cancel-group", text: "Cancel group…" });
        button.addEventListener("click", () => cancelGroup(group, ctx));
        actions.append(button);
      }
      if (done && group.counts.failed + group.counts.cancelled > 0) {
        const button = h("button", { type: "button", id: "retry-group", text: "Retry failed and cancelled items" });
        button.addEventListener("click", () => retryGroup(group, ctx));
        actions.append(button);
      }
      actions.append(h("a", { class: "button", id: "group-items", href: `#/jobs?group=${encodeURIComponent(group.id)}`, text: "Items in the jobs list" }));
      const waiting = group.dependents && group.dependents.length
        ? h("ul", { class: "dependencies", id: "group-dependents" }, group.dependents.map((item) => h("li", {}, refLink(item))), group.dependentsMore ? h("li", { class: "muted", text: "and more" }) : null)
        : h("p", { class: "muted", text: "No job waits for this group." });
      const focused = document.activeElement && document.activeElement.id;
      main.replaceChildren(
        h("h1", {}, `Group ${group.id} `, badge(group.state)),
        facts,
        h("h2", { id: "group-progress-title", text: "Progress" }),
        h("progress", { class: "group", id: "group-progress", max: String(group.itemCount), value: String(count), "aria-labelledby": "group-progress-title" }),
        h("p", { id: "group-progress-text", text: `${count} of ${group.itemCount} items ended (${percent}%): ${group.counts.succeeded} succeeded, ${group.counts.failed} failed, ${group.counts.cancelled} cancelled` }),
        actions,
        h("h2", { text: "Items by state" }), countsTable(group),
        h("h2", { text: "Items ended over time" }), chartBox,
        h("h2", { text: "Failed and cancelled items" }), failuresTable(group),
        h("h2", { text: "Waiting for this group" }), waiting);
      if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    }
    const count = ended(group.counts);
    if (count !== chartFor) {
      chartFor = count;
      const { ends, read, partial } = await itemEnds(group.id);
      const note = partial ? h("p", { class: "muted", text: `Drawn from the first ${read} items of ${group.itemCount}.` }) : null;
      chartBox.replaceChildren(...[completions(ends, { total: partial ? read : group.itemCount }), note].filter(Boolean));
    }
    return done;
  }
  main.replaceChildren(h("h1", { text: `Group ${id}` }), h("p", { class: "muted", text: "Loading…" }));
  ctx.poll(load, POLL_MS);
}

/** What a job waits for (``after``: still waited for or done) and what waits for it, for the job page. */
export function dependencies(job) {
  const after = job.after || [];
  const waiting = new Set(job.waitingFor || []);
  const dependents = job.dependents || [];
  if (!after.length && !dependents.length && !job.groupId) return null;
  const parts = [h("h2", { text: "Dependencies" })];
  if (job.groupId) {
    parts.push(h("p", { id: "job-group" }, `Item ${job.groupIndex} of `, h("span", {}, "group ", groupLink(job.groupId))));
  }
  if (after.length) {
    parts.push(h("h3", { text: "Waits for" }), h("ul", { class: "dependencies", id: "job-after" }, after.map((item) =>
      h("li", {}, refLink(item), " ", badge(!waiting.has(item) ? "succeeded" : job.state === "queued" ? "waiting" : "did not succeed")))));
  }
  parts.push(h("h3", { text: "Waited for by" }), dependents.length
    ? h("ul", { class: "dependencies", id: "job-dependents" }, dependents.map((item) => h("li", {}, refLink(item))), job.dependentsMore ? h("li", { class: "muted", text: "and more" }) : null)
    : h("p", { class: "muted", id: "job-dependents-none", text: "No job waits for this one." }));
  return h("section", { "aria-label": "Dependencies" }, ...parts);
}
