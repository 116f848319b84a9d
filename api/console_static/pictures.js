// What a finished job's outputs look like: a picture per workload, from its outputs' read URLs.

import { fetchOutput } from "./api.js";
import { bars, classMetrics, confusionMatrix, scatter } from "./charts.js";
import { h, safeUrl } from "./dom.js";

function output(job, name) {
  const found = (job.outputs || []).find((item) => item.name === `outputs/${name}`);
  return found && found.url ? safeUrl(found.url) : null;
}

function image(url, alt, label) {
  return h("figure", { class: "picture" }, h("img", { src: url, alt, class: "quicklook" }), h("figcaption", { text: label }));
}

async function json(job, name) {
  const url = output(job, name);
  return url ? fetchOutput(url) : null;
}

async function imagery(job) {
  const url = output(job, "preview.png");
  return url ? [image(url, "RGB preview of the mosaic", "RGB preview (nodata transparent)")] : [];
}

async function training(job) {
  const [confusion, metrics] = await Promise.all([json(job, "confusion_matrix.json"), json(job, "metrics.json")]);
  const parts = [];
  if (confusion) {
    parts.push(h("h3", { text: "Confusion matrix" }), confusionMatrix(confusion.classes, confusion.matrix));
    parts.push(h("h3", { text: "Per-class metrics" }), bars(classMetrics(confusion.classes, confusion.matrix), ["precision", "recall", "f1"], { title: "Precision, recall and F1 per class on the validation pixels" }));
  }
  if (metrics) {
    parts.push(h("p", { class: "figures", text: `Validation accuracy ${Number(metrics.validationAccuracy).toFixed(3)} · majority baseline ${Number(metrics.majorityBaselineAccuracy).toFixed(3)} · ${metrics.trainSamples} training and ${metrics.validationSamples} validation pixels` }));
  }
  return parts;
}

async function inference(job) {
  const parts = [];
  const url = output(job, "classes.png");
  if (url) parts.push(image(url, "Class map", "Class map"));
  const [summary, buildings] = await Promise.all([json(job, "class_summary.json"), json(job, "building_classes.geojson")]);
  if (summary) {
    const total = Object.values(summary.pixelsPerClass).reduce((a, b) => a + b, 0) || 1;
    const rows = summary.classes.map((name) => ({ name, share: summary.pixelsPerClass[name] / total }));
    parts.push(h("h3", { text: "Pixels per class" }), bars(rows, ["share"], { title: "Share of classified pixels per class" }));
  }
  if (buildings && Array.isArray(buildings.features)) {
    const classes = summary ? summary.classes : [];
    const shown = buildings.features.slice(0, 50);
    parts.push(h("h3", { text: `Class fractions per building (${shown.length} of ${buildings.features.length})` }),
      h("div", { class: "scroll" }, h("table", { class: "fractions" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "building" }), h("th", { scope: "col", text: "dominant" }), classes.map((name) => h("th", { scope: "col", text: name })))),
        h("tbody", {}, shown.map((feature) => {
          const p = feature.properties || {};
          return h("tr", {}, h("td", { text: String(p.id) }), h("td", { text: p.dominantClass ?? "–" }), classes.map((name) => h("td", { class: "num", text: p.fractions ? (p.fractions[name] ?? 0).toFixed(2) : "–" })));
        })))));
  }
  return parts;
}

async function embedding(job) {
  const [info, projection] = await Promise.all([json(job, "embedding_info.json"), json(job, "embedding_projection.json")]);
  const parts = [];
  if (info) parts.push(h("p", { class: "figures", text: `Matrix ${info.matrix.rows} × ${info.dimensions} (${info.matrix.dtype}), ${info.method}, kernel ${info.kernelSize}, seed ${info.seed}` }));
  if (projection) {
    const [a, b] = projection.explainedVariance || [0, 0];
    parts.push(h("h3", { text: "First two principal components" }),
      scatter(projection.points, { xLabel: `PC1 (${(a * 100).toFixed(0)}%)`, yLabel: `PC2 (${(b * 100).toFixed(0)}%)` }));
  }
  return parts;
}

const PICTURES = { imagery, training, inference, embedding };

/** The pictures of a succeeded job (empty for workloads without any, or before the outputs exist). */
export async function pictures(job) {
  const draw = PICTURES[job.workload];
  if (!draw || job.state !== "succeeded") return [];
  try {
    return await draw(job);
  } catch (error) {
    return [h("p", { class: "problem", text: `The pictures could not be drawn: ${error.message}` })];
  }
}
