// The console's only way to the platform: the public REST API, authenticated like any other client.

import { authHeaders, forgetToken } from "./auth.js";

let settings = null;

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
  /** [{field, message}] from a problem+json answer. */
  get errors() {
    return Array.isArray(this.problem.errors) ? this.problem.errors : [];
  }
}

export async function loadSettings() {
  if (!settings) {
    const response = await fetch("config.json", { cache: "no-store" });
    if (!response.ok) throw new ApiError(response.status, null);
    settings = await response.json();
  }
  return settings;
}

async function parse(response) {
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) return response.json();
  return null;
}

/** Call the API at ``path`` (relative to /api); resolves the JSON body, rejects with ApiError. */
export async function api(path, { method = "GET", body, headers = {} } = {}) {
  const config = await loadSettings();
  const init = { method, headers: { Accept: "application/json", ...(await authHeaders(config.auth)), ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(`${config.apiBase}/${path}`, init);
  const data = await parse(response);
  if (response.status === 401) forgetToken();
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** A job output's JSON through its short-lived read URL (storage answers it; the API signed it). */
export async function fetchOutput(url) {
  const response = await fetch(url, { credentials: "omit", referrerPolicy: "no-referrer" });
  if (!response.ok) throw new Error(`output answered ${response.status}`);
  return response.json();
}
