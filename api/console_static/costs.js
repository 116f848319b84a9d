// What a project's jobs cost: GET /api/projects/{id}/costs drawn as stacked bars per day, by backend or
// workload, with the figures in a table beside it (the chart is never the only way to read them).

import { api } from "./api.js";
import { h, s } from "./dom.js";

const SERIES = 6; // colours cost-0 … cost-5; more series share the last
const BY = { backend: "byBackend", workload: "byWorkload" };

/** ``412.5037`` → ``412.50`` (half up, to the cent: the API's amounts are exact). */
export function cents(amount) {
  const [whole, fraction = ""] = String(amount).split(".");
  const value = Number(`${whole}.${fraction.padEnd(3, "0").slice(0, 3)}`);
  return (Math.round(value * 100 + Number.EPSILON) / 100).toFixed(2);
}

/** A job's cost as a line: ``0.13 USD (attributed)``, or ``unknown: <reason>``. */
export function costText(cost) {
  if (!cost) return "";
  if (cost.amount === null || cost.amount === undefined) return `unknown: ${cost.reason || "no reason recorded"}`;
  return `${cents(cost.amount)} ${cost.currency || ""}${cost.attributed ? " (attributed share of a node)" : ""}`.trim();
}

/** Stacked bars, one per day, one colour per ``by`` value; a table of the same figures follows. */
export function costChart(body, by) {
  const key = BY[by];
  const names = [...new Set(body.days.flatMap((day) => Object.keys(day[key] || {})))].sort();
  const totals = body.days.map((day) => Number(day.amount));
  const top = Math.max(...totals, 0.01);
  const width = 720, height = 220, left = 60, bottom = 30, barGap = 4;
  const slot = Math.min((width - left - 10) / Math.max(body.days.length, 1), 48); // a day is never wider than this
  const y = (value) => (height - bottom) - (value / top) * (height - bottom - 10);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, class: "costs", role: "img", "aria-labelledby": "costs-chart-title" });
  svg.append(s("title", { id: "costs-chart-title", text: `Cost per day by ${by}, ${body.days.length} days, ${cents(body.total)} ${body.currency || ""} in all` }));
  svg.append(s("text", { x: left - 6, y: 14, class: "axis", "text-anchor": "end", text: cents(top) }));
  svg.append(s("text", { x: left - 6, y: height - bottom, class: "axis", "text-anchor": "end", text: "0" }));
  body.days.forEach((day, index) => {
    let base = 0;
    const x = left + index * slot + barGap / 2;
    names.forEach((name, series) => {
      const value = Number((day[key] || {})[name] || 0);
      if (!value) return;
      const bar = s("rect", { x, y: y(base + value), width: Math.max(slot - barGap, 1), height: y(base) - y(base + value), class: `cost-${Math.min(series, SERIES - 1)}` });
      bar.append(s("title", { text: `${day.day} ${name}: ${cents(value)}` }));
      svg.append(bar);
      base += value;
    });
    if (body.days.length <= 31) svg.append(s("text", { x: x + (slot - barGap) / 2, y: height - 12, class: "axis", "text-anchor": "middle", text: day.day.slice(8) }));
  });
  const legend = h("ul", { class: "legend" });
  names.forEach((name, series) => legend.append(h("li", {}, s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, class: `cost-${Math.min(series, SERIES - 1)}` })), ` ${name}`)));
  const table = h("table", { class: "costs" },
    h("caption", { text: `Cost per day by ${by} (${body.currency || "no currency yet"})` }),
    h("thead", {}, h("tr", {}, ["day", ...names, "total", "jobs", "unpriced"].map((name) => h("th", { scope: "col", text: name })))),
    h("tbody", {}, ...body.days.map((day) => h("tr", {},
      h("th", { scope: "row", text: day.day }),
      ...names.map((name) => h("td", { class: "figures", text: cents((day[key] || {})[name] || "0") })),
      h("td", { class: "figures", text: cents(day.amount) }), h("td", { class: "figures", text: String(day.jobs) }), h("td", { class: "figures", text: String(day.unpriced) })))));
  return h("div", {}, h("figure", { class: "chart" }, svg, legend), h("div", { class: "scroll" }, table));
}

export async function costsPage(main, query, ctx) {
  const project = query.get("project") || "demo";
  const by = BY[query.get("by")] ? query.get("by") : "backend";
  const projectInput = h("input", { id: "costs-project", name: "project", type: "text", value: project });
  const bySelect = h("select", { id: "costs-by", name: "by" }, Object.keys(BY).map((name) => h("option", { value: name, selected: name === by, text: name })));
  const fromInput = h("input", { id: "costs-from", name: "from", type: "date", value: query.get("from") || "" });
  const toInput = h("input", { id: "costs-to", name: "to", type: "date", value: query.get("to") || "" });
  const filters = h("form", { class: "filters", "aria-label": "Choose the costs to show" },
    h("label", { for: "costs-project", text: "Project" }), projectInput,
    h("label", { for: "costs-by", text: "By" }), bySelect,
    h("label", { for: "costs-from", text: "From" }), fromInput,
    h("label", { for: "costs-to", text: "To" }), toInput,
    h("button", { type: "submit", text: "Show" }));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams({ project: projectInput.value.trim(), by: bySelect.value });
    if (fromInput.value) next.set("from", fromInput.value);
    if (toInput.value) next.set("to", toInput.value);
    ctx.navigate(`#/costs?${next}`);
  });
  const range = new URLSearchParams();
  if (query.get("from")) range.set("from", query.get("from"));
  if (query.get("to")) range.set("to", query.get("to"));
  let body;
  try {
    body = await api(`projects/${encodeURIComponent(project)}/costs${range.size ? `?${range}` : ""}`);
  } catch (error) {
    const detail = error.errors.length ? `: ${error.errors.map((item) => `${item.field}: ${item.message}`).join("; ")}` : "";
    main.replaceChildren(h("h1", { text: `Costs of ${project}` }), filters, h("p", { class: "problem", role: "alert", text: `${error.message}${detail}` }));
    return;
  }
  const summary = h("p", { id: "costs-total", text: `${body.from} to ${body.to}: ${cents(body.total)} ${body.currency || ""} for ${body.jobs} job(s)${body.unpriced ? `, ${body.unpriced} with no known price (not in the sums)` : ""}.` });
  const budget = body.budget ? h("p", { id: "costs-budget", class: body.budget.reason ? "problem" : "muted", text: body.budget.reason || `Budget ${cents(body.budget.monthly)} a month: ${cents(body.budget.spent)} spent and ${cents(body.budget.committed)} running this month.` }) : null;
  const chart = body.days.length ? costChart(body, by) : h("p", { class: "muted", text: "No job ended in this period." });
  main.replaceChildren(h("h1", { text: `Costs of ${project}` }), filters, summary, ...(budget ? [budget] : []), chart);
}
