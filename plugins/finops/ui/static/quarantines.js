/* FinOps view: the recent quarantined billing loads, each linked to the Great Expectations Data
   Docs rendered beside its files. Uses the helpers of app.js (el, api, renderTable, showError);
   every server value goes in through textContent or a checked relative href. */
"use strict";

async function loadQuarantines() {
  const main = document.querySelector("main");
  if (!main) return;
  const box = el("div", {id: "quarantines-table"});
  main.append(el("section", {id: "quarantines"}, el("h2", {}, "Quarantined loads"), box));
  try {
    renderTable(box, [
      {key: "source", label: "Source"}, {key: "billing_period", label: "Period"},
      {key: "finished_at", label: "When"}, {key: "headline", label: "Cause"},
      {label: "Column / rule", fmt: r => [r.column, r.rule].filter(Boolean).join(" / ")},
      {label: "Validation", fmt: r => (r.data_docs && r.data_docs.startsWith("quarantine-docs/"))
        ? el("a", {href: r.data_docs, target: "_blank", rel: "noopener"}, "Data Docs") : ""},
    ], await api("quarantines"), {emptyText: "No quarantined loads."});
  } catch (err) { showError(box, err); }
}

document.addEventListener("DOMContentLoaded", loadQuarantines);
