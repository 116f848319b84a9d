// The submit form, generated from the OpenAPI document: JobRequest for the envelope, one
// <Workload>Parameters schema per workload for the parameters (bounds, defaults, examples shown).
// The server is the judge (novalidate): its problem+json names a field path, and the message is
// placed on that field.

import { api, ApiError } from "./api.js";
import { announce, h } from "./dom.js";
import { profileSelect } from "./profiles.js";

let documentPromise = null;

function openapi() {
  if (!documentPromise) documentPromise = api("openapi.json");
  return documentPromise;
}

function resolve(schema, schemas) {
  if (schema && schema.$ref) return resolve(schemas[schema.$ref.split("/").pop()], schemas);
  if (schema && Array.isArray(schema.anyOf)) {
    const real = schema.anyOf.filter((option) => option.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], schemas), optional: true, description: schema.description || real[0].description, default: schema.default };
  }
  return schema || {};
}

function bounds(schema) {
  const parts = [];
  const item = schema.items || {};
  if (schema.minimum !== undefined || schema.maximum !== undefined) parts.push(`${schema.minimum ?? "…"} to ${schema.maximum ?? "…"}`);
  if (schema.minItems !== undefined || schema.maxItems !== undefined) parts.push(`${schema.minItems ?? 0} to ${schema.maxItems ?? "…"} items`);
  if (item.minimum !== undefined || item.maximum !== undefined) parts.push(`each ${item.minimum ?? "…"} to ${item.maximum ?? "…"}`);
  if (schema.maxLength !== undefined) parts.push(`at most ${schema.maxLength} characters`);
  return parts.join("; ");
}

function fieldId(path) {
  return `field-${path.replace(/[^A-Za-z0-9]+/g, "-")}`;
}

/** One labelled control for a parameter; ``read()`` gives its JSON value (undefined when left empty). */
function control(name, schema, example, required) {
  const id = fieldId(`parameters.${name}`);
  const hints = [schema.description, bounds(schema), schema.default !== undefined && schema.default !== null ? `default ${JSON.stringify(schema.default)}` : "", example !== undefined ? `example ${JSON.stringify(example)}` : ""].filter(Boolean);
  const hintId = `${id}-hint`;
  let input;
  let read;
  if (schema.type === "boolean") {
    input = h("select", { id, name, "aria-describedby": hintId }, h("option", { value: "", text: "(default)" }), h("option", { value: "true", text: "true" }), h("option", { value: "false", text: "false" }));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (schema.type === "array") {
    const numeric = ["integer", "number"].includes((schema.items || {}).type);
    input = h("input", { id, name, type: "text", "aria-describedby": hintId, placeholder: example !== undefined ? (Array.isArray(example) ? example.join(", ") : String(example)) : "comma-separated" });
    read = () => {
      if (!input.value.trim()) return undefined;
      const items = input.value.split(",").map((item) => item.trim());
      return numeric ? items.map((item) => (item !== "" && !Number.isNaN(Number(item)) ? Number(item) : item)) : items;
    };
  } else if (schema.type === "integer" || schema.type === "number") {
    input = h("input", { id, name, type: "text", inputmode: "decimal", "aria-describedby": hintId, placeholder: example !== undefined ? String(example) : "" });
    // Anything that is not a number goes as typed, so the server names the field and says why.
    read = () => (input.value.trim() === "" ? undefined : Number.isNaN(Number(input.value)) ? input.value : Number(input.value));
  } else {
    input = h("input", { id, name, type: "text", "aria-describedby": hintId, placeholder: example !== undefined ? String(example) : "" });
    read = () => (input.value === "" ? undefined : input.value);
  }
  const row = h("div", { class: "field", "data-field": `parameters.${name}` },
    h("label", { for: id, text: `${name}${required ? " (required)" : ""}` }),
    input,
    h("p", { class: "hint", id: hintId, text: hints.join(" · ") }),
    h("p", { class: "error", id: `${id}-error`, hidden: true }));
  return { name, row, read };
}

function lines(value) {
  return value.split("\n").map((line) => line.trim()).filter(Boolean);
}

/** Where a problem's field path goes: the closest field the form has (parameters.x, inputs[2].blob → inputs). */
function targetFor(form, path) {
  let candidate = String(path || "");
  while (candidate) {
    const found = form.querySelector(`[data-field="${CSS.escape(candidate)}"]`);
    if (found) return found;
    const cut = Math.max(candidate.lastIndexOf("."), candidate.lastIndexOf("["));
    candidate = cut > 0 ? candidate.slice(0, cut) : "";
  }
  return null;
}

function clearErrors(form) {
  for (const error of form.querySelectorAll(".error")) {
    error.hidden = true;
    error.textContent = "";
  }
  for (const input of form.querySelectorAll("[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    input.removeAttribute("aria-errormessage");
    const hint = input.dataset.hint;
    if (hint) input.setAttribute("aria-describedby", hint);
    else input.removeAttribute("aria-describedby");
  }
}

// A field's error is announced with it: referenced by aria-errormessage (read when the field is invalid)
// and placed first in aria-describedby (what every screen reader reads), before the field's hint.
function markInvalid(input, message) {
  if (input.dataset.hint === undefined) input.dataset.hint = input.getAttribute("aria-describedby") || "";
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-errormessage", message.id);
  input.setAttribute("aria-describedby", [message.id, input.dataset.hint].filter(Boolean).join(" "));
}

function showProblem(form, summary, error) {
  summary.hidden = false;
  summary.textContent = `${error.status}: ${error.message}`;
  let first = null;
  for (const item of error.errors) {
    const field = targetFor(form, item.field);
    if (!field) {
      summary.append(h("br"), `${item.field || "request"}: ${item.message}`);
      continue;
    }
    const message = field.querySelector(".error");
    message.hidden = false;
    // The API's message may already start with the field's path; say it once.
    const text = String(item.message).startsWith(`${item.field}:`) ? item.message : `${item.field}: ${item.message}`;
    message.textContent = message.textContent ? `${message.textContent}; ${text}` : text;
    const input = field.querySelector("input, select, textarea");
    markInvalid(input, message);
    first = first || input;
  }
  (first || summary).focus();
}

/** The submit page; ``prefill`` may name a workload and a project. */
export async function submitPage(main, prefill, navigate) {
  const doc = await openapi();
  const schemas = doc.components.schemas;
  const request = schemas.JobRequest;
  const workloads = request.properties.workload.enum;
  const backends = resolve(request.properties.backend, schemas).enum || [];
  const workload = workloads.includes(prefill.workload) ? prefill.workload : workloads[0];
  const envelope = (name, label, input, hint) => h("div", { class: "field", "data-field": name },
    h("label", { for: fieldId(name), text: label }), input,
    hint ? h("p", { class: "hint", id: `${fieldId(name)}-hint`, text: hint }) : null,
    h("p", { class: "error", id: `${fieldId(name)}-error`, hidden: true }));
  const workloadSelect = h("select", { id: fieldId("workload"), name: "workload" }, workloads.map((name) => h("option", { value: name, selected: name === workload, text: name })));
  const project = h("input", { id: fieldId("projectId"), name: "projectId", type: "text", required: true, value: prefill.project || "demo", "aria-describedby": `${fieldId("projectId")}-hint` });
  const backend = h("select", { id: fieldId("backend"), name: "backend" }, h("option", { value: "", text: "(the default)" }), backends.map((name) => h("option", { value: name, text: name })));
  const blobs = h("textarea", { id: fieldId("inputs"), name: "inputs", rows: 3, "aria-describedby": `${fieldId("inputs")}-hint` });
  const jobs = h("textarea", { id: fieldId("inputJobs"), name: "inputJobs", rows: 2, "aria-describedby": `${fieldId("inputJobs")}-hint` });
  if (prefill.inputJob) jobs.value = prefill.inputJob;
  const labels = h("textarea", { id: fieldId("labels"), name: "labels", rows: 2, "aria-describedby": `${fieldId("labels")}-hint` });
  const paramsBox = h("fieldset", { class: "params" });
  const summary = h("p", { class: "problem", role: "alert", tabindex: "-1", hidden: true });
  let controls = [];

  function renderParams() {
    const name = `${workloadSelect.value.charAt(0).toUpperCase()}${workloadSelect.value.slice(1)}Parameters`;
    const schema = schemas[name] || { properties: {} };
    const example = (schema.examples || [])[0] || {};
    const required = new Set(schema.required || []);
    controls = Object.entries(schema.properties || {}).map(([key, value]) => control(key, resolve(value, schemas), example[key], required.has(key)));
    paramsBox.replaceChildren(h("legend", { text: `Parameters of ${workloadSelect.value}` }), ...controls.map((item) => item.row));
    if (!controls.length) paramsBox.append(h("p", { class: "muted", text: "This workload takes no parameters." }));
  }
  workloadSelect.addEventListener("change", renderParams);
  renderParams();
  const profile = await profileSelect(fieldId("profile"));
  const refreshProfiles = () => profile.refresh(workloadSelect.value, backend.value);
  workloadSelect.addEventListener("change", refreshProfiles);
  backend.addEventListener("change", refreshProfiles);
  refreshProfiles();

  const submit = h("button", { type: "submit", text: "Submit job" });
  const form = h("form", { class: "submit", novalidate: true, "aria-labelledby": "submit-title" },
    envelope("workload", "Workload", workloadSelect),
    envelope("projectId", "Project", project, "lowercase letters, digits and '-'"),
    envelope("backend", "Backend", backend),
    envelope("profile", "Compute profile", profile.select, "what the job runs on, as the backend offers it to this workload"),
    envelope("inputs", "Input blobs", blobs, "one blob name in the inputs container per line, e.g. demo/scene/scene_left.tif"),
    envelope("inputJobs", "Input jobs", jobs, "one job id per line: that job's outputs become inputs"),
    envelope("labels", "Labels", labels, "one key=value per line"),
    paramsBox, summary, h("div", { class: "actions" }, submit));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    summary.hidden = true;
    const body = { workload: workloadSelect.value, projectId: project.value.trim() };
    if (backend.value) body.backend = backend.value;
    if (profile.select.value) body.profile = profile.select.value;
    const inputs = [...lines(blobs.value).map((blob) => ({ blob })), ...lines(jobs.value).map((jobId) => ({ jobId }))];
    if (inputs.length) body.inputs = inputs;
    const labelLines = lines(labels.value);
    if (labelLines.length) body.labels = Object.fromEntries(labelLines.map((line) => [line.split("=")[0].trim(), line.slice(line.indexOf("=") + 1).trim()]));
    const parameters = {};
    for (const item of controls) {
      const value = item.read();
      if (value !== undefined) parameters[item.name] = value;
    }
    if (Object.keys(parameters).length) body.parameters = parameters;
    submit.disabled = true;
    try {
      const job = await api("jobs", { method: "POST", body });
      announce(`Job ${job.id} accepted`);
      navigate(`#/job/${encodeURIComponent(job.id)}`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showProblem(form, summary, error);
    } finally {
      submit.disabled = false;
    }
  });
  main.replaceChildren(h("h1", { id: "submit-title", text: "Submit a job" }), form);
}
