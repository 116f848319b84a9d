// The console's entry: a hash router over the pages, one poller at a time, the caller's settings.
//
// Each navigation gives its page a view of its own (an element the router puts in <main>): a page
// still loading when it is left renders into its view, which is no longer shown, so a late answer
// can never replace the page the user went to.

import { loadSettings } from "./api.js";
import { h } from "./dom.js";
import { submitPage } from "./form.js";
import { costsPage } from "./costs.js";
import { groupPage } from "./groups.js";
import { backendsPage, jobPage, jobsPage } from "./pages.js";

const main = document.getElementById("main");
let generation = 0; // bumps on every navigation: a poller of an older page stops by itself
let current = null;

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function context(mine, view) {
  return {
    navigate,
    refresh: () => current && current(),
    /** Run ``load`` now and again until the page changes: ``load`` resolves true (stop), false (again in
     * ``ms``) or a number of milliseconds (again after that long: a quiet page is polled less often). */
    poll(load, ms) {
      let timer = null;
      const run = async () => {
        clearTimeout(timer);
        if (mine !== generation) return;
        let next = true;
        try {
          next = await load();
        } catch (error) {
          view.append(h("p", { class: "problem", role: "alert", text: String(error.message || error) }));
        }
        if (next !== true && mine === generation) timer = setTimeout(run, typeof next === "number" ? next : ms);
      };
      current = run;
      run();
    },
  };
}

async function route() {
  generation += 1;
  current = null;
  const mine = generation;
  const [path, search = ""] = (location.hash.slice(1) || "/jobs").split("?");
  const query = new URLSearchParams(search);
  const section = path.split("/")[1] || "jobs";
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const view = h("div", { class: "view" }, h("p", { class: "muted", text: "Loading…" }));
  main.replaceChildren(view);
  const ctx = context(mine, view);
  try {
    if (section === "job") await jobPage(view, decodeURIComponent(path.split("/")[2] || ""), ctx);
    else if (section === "groups") await groupPage(view, decodeURIComponent(path.split("/")[2] || ""), ctx);
    else if (section === "submit") await submitPage(view, { workload: query.get("workload"), project: query.get("project"), inputJob: query.get("inputJob") }, navigate);
    else if (section === "backends") await backendsPage(view);
    else if (section === "costs") await costsPage(view, query, ctx);
    else await jobsPage(view, query, ctx);
  } catch (error) {
    view.replaceChildren(h("h1", { text: "Something went wrong" }), h("p", { class: "problem", role: "alert", text: String(error.message || error) }));
  }
  if (mine === generation) document.title = `${view.querySelector("h1")?.textContent || "haste"} · haste console`;
}

async function start() {
  try {
    const settings = await loadSettings();
    document.getElementById("who").textContent = settings.auth.mode === "entra" ? "signed in with Entra ID" : "development caller";
  } catch (error) {
    main.replaceChildren(h("p", { class: "problem", role: "alert", text: `The console settings could not be read: ${error.message}` }));
    return;
  }
  // The skip link moves the focus to the content; followed as a link, its "#main" would be a route.
  document.querySelector("a.skip").addEventListener("click", (event) => {
    event.preventDefault();
    main.focus();
  });
  window.addEventListener("hashchange", route);
  await route();
}

start();
