// Drives the group routes through the client openapi-typescript and openapi-fetch make, one step per run
// (the test delivers the group's queue step between runs): submit, follow (read, list the items, cancel),
// then retry. Compiled with tsc (strict) against the generated types; prints one JSON line of what it saw.
import createClient from "openapi-fetch";
declare const process: { argv: string[] };
import type { components, paths } from "./schema.js";

type Group = components["schemas"]["Group"];
type GroupRequest = components["schemas"]["GroupRequest"];

const [baseUrl = "", step = "", project = "", groupId = "", count = "4"] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl });
const seen: Record<string, unknown> = {};

function counts(group: Group): Record<string, number | undefined> {
  return { ...group.counts };
}

if (step === "submit") {
  // The generator makes fields with a default required in its types: a typed client sends them.
  const body: GroupRequest = {
    workload: "artifacts",
    projectId: project,
    backend: "auto",
    inputs: [{ blob: `${project}/shared.txt`, jobId: null, dest: null }],
    parameters: {},
    labels: {},
    after: [],
    correlationId: null,
    items: Array.from({ length: Number(count) }, (_, n) => ({ parameters: {}, inputs: [], labels: { tile: String(n) }, after: [] })),
  };
  const header = { "Idempotency-Key": `group-${project}` };
  const first = await client.POST("/groups", { body, params: { header } });
  const replay = await client.POST("/groups", { body, params: { header } });
  const bad = await client.POST("/groups", { body: { ...body, items: [] } });
  seen.submitted = { status: first.response.status, id: first.data?.id, state: first.data?.state, itemCount: first.data?.itemCount, location: first.response.headers.get("Location") };
  seen.replay = { status: replay.response.status, same: replay.data?.id === first.data?.id };
  seen.bad = { status: bad.response.status, fields: bad.error?.errors?.map((error) => error.field) };
} else if (step === "follow") {
  const got = await client.GET("/groups/{id}", { params: { path: { id: groupId } } });
  if (!got.data) throw new Error(`get: ${JSON.stringify(got.error)}`);
  seen.got = { made: got.data.made, counts: counts(got.data), progress: got.data.progress };
  const items: [number | null | undefined, string | undefined][] = [];
  let token: string | null | undefined;
  do {
    const query = { groupId, pageSize: 3, ...(token ? { continuationToken: token } : {}) };
    const page = await client.GET("/jobs", { params: { query } });
    if (!page.data) throw new Error(`list: ${JSON.stringify(page.error)}`);
    for (const item of page.data.items) items.push([item.groupIndex, item.labels.tile]);
    token = page.data.continuationToken;
  } while (token);
  seen.items = items;
  const cancelled = await client.POST("/groups/{id}/cancel", { params: { path: { id: groupId } } });
  seen.cancelled = { status: cancelled.response.status, state: cancelled.data?.state };
} else if (step === "retry") {
  const ended = await client.GET("/groups/{id}", { params: { path: { id: groupId } } });
  if (!ended.data) throw new Error(`get: ${JSON.stringify(ended.error)}`);
  seen.ended = { state: ended.data.state, counts: counts(ended.data), failures: (ended.data.failures ?? []).length };
  const retried = await client.POST("/groups/{id}/retry", { params: { path: { id: groupId } } });
  seen.retried = { status: retried.response.status, retried: retried.data?.retried, state: retried.data?.state };
  const again = await client.POST("/groups/{id}/retry", { params: { path: { id: groupId } } });
  seen.again = { status: again.response.status, problem: again.error?.status };
  const missing = await client.GET("/groups/{id}", { params: { path: { id: "gnosuchgroup0000" } } });
  seen.missing = { status: missing.response.status, problem: missing.error?.status };
} else {
  throw new Error(`unknown step ${step}`);
}
console.log(JSON.stringify(seen));
