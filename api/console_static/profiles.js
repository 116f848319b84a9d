// The profile choice of the submit form: the compute profiles GET /api/backends lists, filtered by the
// chosen workload and backend (ADR 0043). "auto" (and the default backend when it is auto) offers every
// profile some backend that auto may choose offers to the workload; the server still judges the choice.

import { api } from "./api.js";
import { h } from "./dom.js";

let listingPromise = null;

function backendsListing() {
  if (!listingPromise) listingPromise = api("backends").catch(() => ({ default: "auto", backends: [] }));
  return listingPromise;
}

/** The profile names a job of ``workload`` may name on ``backend`` ("" = the default backend), sorted. */
export function profileChoices(listing, workload, backend) {
  const chosen = backend || listing.default || "auto";
  const candidates = (listing.backends || []).filter((item) => (chosen === "auto" ? item.autoRoutes : item.name === chosen));
  const names = new Set();
  for (const candidate of candidates) {
    for (const profile of candidate.profiles || []) {
      if (profile.name !== "default" && profile.workloads.includes(workload)) names.add(profile.name);
    }
  }
  return [...names].sort();
}

function describe(listing, name) {
  for (const backend of listing.backends || []) {
    const found = (backend.profiles || []).find((profile) => profile.name === name);
    if (found) return `${name} (${found.tier}${found.maxRunS ? `, at most ${found.maxRunS} s` : ""})`;
  }
  return name;
}

/** A select of the profiles; ``refresh(workload, backend)`` keeps it to what they allow. */
export async function profileSelect(id) {
  const listing = await backendsListing();
  const select = h("select", { id, name: "profile", "aria-describedby": `${id}-hint` });
  function refresh(workload, backend) {
    const previous = select.value;
    const names = profileChoices(listing, workload, backend);
    select.replaceChildren(
      h("option", { value: "", text: "(default: the workload's own compute)" }),
      ...names.map((name) => h("option", { value: name, text: describe(listing, name), selected: name === previous })),
    );
  }
  return { select, refresh };
}
