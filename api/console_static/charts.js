// Pictures drawn in the browser as SVG from the jobs' own outputs (nothing pre-rendered).
// Colours come from CSS classes or SVG presentation attributes, never style attributes.

import { h, s } from "./dom.js";

const STATE_ORDER = ["queued", "submitting", "running", "postprocessing", "cancel_requested", "succeeded", "failed", "cancelled"];

/** The job's history as state bands on a time axis, one row of marks per source. */
export function timeline(history) {
  const events = history.filter((event) => !Number.isNaN(Date.parse(event.at)));
  if (!events.length) return h("p", { class: "muted", text: "No history yet." });
  const start = Date.parse(events[0].at);
  const end = Math.max(Date.parse(events[events.length - 1].at), start + 1000);
  const width = 720;
  const left = 90; // source names on the left; bands and marks share one time axis to their right
  const x = (at) => left + ((Date.parse(at) - start) / (end - start)) * (width - left - 10);
  const sources = [...new Set(events.map((event) => event.source))];
  const height = 46 + sources.length * 16;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, class: "timeline", role: "img", "aria-labelledby": "timeline-title" });
  svg.append(s("title", { id: "timeline-title", text: `Status timeline, ${events.length} events from ${events[0].at} to ${events[events.length - 1].at}` }));
  events.forEach((event, index) => {
    const x0 = x(event.at);
    const x1 = index + 1 < events.length ? x(events[index + 1].at) : width - 10;
    const band = s("rect", { x: x0, y: 4, width: Math.max(x1 - x0, 2), height: 18, class: `band state-${event.state}` });
    band.append(s("title", { text: `${event.state}: ${event.message}` }));
    svg.append(band);
  });
  sources.forEach((source, row) => {
    const y = 40 + row * 16;
    svg.append(s("text", { x: left - 8, y: y + 4, class: "axis", "text-anchor": "end", text: source }));
    for (const event of events.filter((item) => item.source === source)) {
      const mark = s("circle", { cx: x(event.at), cy: y, r: 4, class: `mark state-${event.state}` });
      mark.append(s("title", { text: `${event.at} ${event.message}` }));
      svg.append(mark);
    }
  });
  const legend = h("ul", { class: "legend" });
  for (const state of STATE_ORDER.filter((name) => events.some((event) => event.state === name))) {
    legend.append(h("li", {}, s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, class: `band state-${state}` })), ` ${state}`));
  }
  return h("figure", { class: "chart" }, svg, legend);
}

/** Precision, recall and F1 per class from a confusion matrix (rows: true class, columns: predicted). */
export function classMetrics(classes, matrix) {
  return classes.map((name, i) => {
    const truePositive = matrix[i][i];
    const actual = matrix[i].reduce((a, b) => a + b, 0);
    const predicted = matrix.reduce((sum, row) => sum + row[i], 0);
    const precision = predicted ? truePositive / predicted : 0;
    const recall = actual ? truePositive / actual : 0;
    const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
    return { name, precision, recall, f1, support: actual };
  });
}

/** The confusion matrix as a heat map with counts in each cell. */
export function confusionMatrix(classes, matrix) {
  const cell = 56;
  const left = 110;
  const top = 30;
  const size = classes.length * cell;
  const max = Math.max(1, ...matrix.flat());
  const svg = s("svg", { viewBox: `0 0 ${left + size + 10} ${top + size + 40}`, width: left + size + 10, class: "confusion", role: "img", "aria-labelledby": "cm-title" });
  svg.append(s("title", { id: "cm-title", text: "Confusion matrix: rows are true classes, columns predicted classes" }));
  svg.append(s("text", { x: left + size / 2, y: 14, class: "axis", "text-anchor": "middle", text: "predicted" }));
  classes.forEach((name, i) => {
    svg.append(s("text", { x: left - 6, y: top + i * cell + cell / 2 + 4, class: "axis", "text-anchor": "end", text: name }));
    svg.append(s("text", { x: left + i * cell + cell / 2, y: top + size + 16, class: "axis", "text-anchor": "middle", text: name }));
    classes.forEach((_, j) => {
      const value = matrix[i][j];
      const level = Math.min(9, Math.floor((value / max) * 9.999));
      svg.append(s("rect", { x: left + j * cell, y: top + i * cell, width: cell - 2, height: cell - 2, class: `heat heat-${level}` }));
      svg.append(s("text", { x: left + j * cell + cell / 2 - 1, y: top + i * cell + cell / 2 + 4, "text-anchor": "middle", class: level > 5 ? "cell light" : "cell", text: String(value) }));
    });
  });
  return h("figure", { class: "chart" }, svg, h("figcaption", { text: "Validation pixels: rows true class, columns predicted class." }));
}

/** Horizontal bars, one group per row and one bar per series, values in [0, max]. */
export function bars(rows, series, { max = 1, format = (v) => v.toFixed(2), title = "" } = {}) {
  const left = 120;
  const barHeight = 12;
  const group = series.length * barHeight + 10;
  const width = 560;
  const svg = s("svg", { viewBox: `0 0 ${width} ${rows.length * group + 20}`, width, class: "bars", role: "img", "aria-label": title });
  rows.forEach((row, i) => {
    const y = 10 + i * group;
    svg.append(s("text", { x: left - 6, y: y + (series.length * barHeight) / 2 + 4, "text-anchor": "end", class: "axis", text: row.name }));
    series.forEach((key, k) => {
      const value = Number(row[key]) || 0;
      const length = max > 0 ? (value / max) * (width - left - 80) : 0;
      svg.append(s("rect", { x: left, y: y + k * barHeight, width: Math.max(length, 0.5), height: barHeight - 2, class: `bar series-${k}` }));
      svg.append(s("text", { x: left + length + 4, y: y + k * barHeight + 9, class: "value", text: `${key} ${format(value)}` }));
    });
  });
  return h("figure", { class: "chart" }, svg, title ? h("figcaption", { text: title }) : null);
}

/** A scatter plot of {x, y, id} points (the embedding's first two principal components). */
export function scatter(points, { xLabel = "PC1", yLabel = "PC2" } = {}) {
  const width = 420;
  const height = 320;
  const pad = 34;
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [x0, x1] = [Math.min(...xs, 0), Math.max(...xs, 0)];
  const [y0, y1] = [Math.min(...ys, 0), Math.max(...ys, 0)];
  const sx = (v) => pad + ((v - x0) / (x1 - x0 || 1)) * (width - 2 * pad);
  const sy = (v) => height - pad - ((v - y0) / (y1 - y0 || 1)) * (height - 2 * pad);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, class: "scatter", role: "img", "aria-label": `Projection of ${points.length} embeddings on ${xLabel} and ${yLabel}` });
  svg.append(s("line", { x1: pad, y1: sy(0), x2: width - pad, y2: sy(0), class: "grid" }));
  svg.append(s("line", { x1: sx(0), y1: pad, x2: sx(0), y2: height - pad, class: "grid" }));
  svg.append(s("text", { x: width / 2, y: height - 6, "text-anchor": "middle", class: "axis", text: xLabel }));
  svg.append(s("text", { x: 10, y: height / 2, class: "axis", text: yLabel }));
  for (const point of points) {
    const dot = s("circle", { cx: sx(point.x), cy: sy(point.y), r: 4, class: "dot" });
    dot.append(s("title", { text: `${point.id} (${point.x.toFixed(3)}, ${point.y.toFixed(3)})` }));
    svg.append(dot);
  }
  return h("figure", { class: "chart" }, svg);
}

/** Items ended over time: one cumulative step line per end state, from ``ends`` ({at, state}) in any order. */
export function completions(ends, { total = ends.length, title = "Items ended over time" } = {}) {
  const timed = ends.filter((end) => !Number.isNaN(Date.parse(end.at))).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  if (!timed.length) return h("p", { class: "muted", id: "completions-none", text: "No item has ended yet." });
  const start = Date.parse(timed[0].at);
  const end = Math.max(Date.parse(timed[timed.length - 1].at), start + 1000);
  const width = 720, height = 200, left = 50, bottom = 28, top = 10;
  const x = (at) => left + ((Date.parse(at) - start) / (end - start)) * (width - left - 10);
  const y = (count) => height - bottom - (count / Math.max(total, 1)) * (height - bottom - top);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, class: "completions", role: "img", "aria-labelledby": "completions-title" });
  svg.append(s("title", { id: "completions-title", text: `${title}: ${timed.length} of ${total} from ${timed[0].at} to ${timed[timed.length - 1].at}` }));
  svg.append(s("line", { x1: left, y1: y(0), x2: width - 10, y2: y(0), class: "grid" }));
  svg.append(s("line", { x1: left, y1: y(total), x2: width - 10, y2: y(total), class: "grid" }));
  svg.append(s("text", { x: left - 6, y: y(total) + 4, class: "axis", "text-anchor": "end", text: String(total) }));
  svg.append(s("text", { x: left - 6, y: y(0) + 4, class: "axis", "text-anchor": "end", text: "0" }));
  svg.append(s("text", { x: left, y: height - 8, class: "axis", text: timed[0].at.slice(11, 19) }));
  svg.append(s("text", { x: width - 10, y: height - 8, class: "axis", "text-anchor": "end", text: timed[timed.length - 1].at.slice(11, 19) }));
  const states = STATE_ORDER.filter((state) => timed.some((item) => item.state === state));
  for (const state of states) {
    let count = 0;
    let path = `M ${left} ${y(0)}`;
    for (const item of timed.filter((entry) => entry.state === state)) {
      path += ` H ${x(item.at)} V ${y(++count)}`;
    }
    path += ` H ${width - 10}`;
    svg.append(s("path", { d: path, class: `line state-${state}` }));
  }
  const legend = h("ul", { class: "legend" }, states.map((state) => h("li", {}, s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, class: `band state-${state}` })), ` ${state} ${timed.filter((item) => item.state === state).length}`)));
  return h("figure", { class: "chart" }, svg, legend);
}
