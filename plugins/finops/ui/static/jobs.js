/* FinOps view, training jobs page: each job's state, estimated cost, the bill once the export
   arrives (joined by the instances' job / attempt tags), the same work all on demand and the
   savings against it, showback per team; click a job for its attempts on a timeline with the
   reason for every move, what each attempt was billed, and the latest plan table. Uses the
   helpers of app.js (el, api, renderTable, fmtMoney, showError); server values go in through
   textContent. */
"use strict";

function jobTimeline(items) {
  const t = s => (s ? Date.parse(s.endsWith("Z") || s.includes("+") ? s : s + "Z") : Date.now());
  const start = Math.min(...items.map(a => t(a.started_at)));
  const span = Math.max(Math.max(...items.map(a => t(a.ended_at))) - start, 1);
  return el("div", {class: "job-timeline"}, ...items.map(a => {
    const bar = el("span", {class: "job-bar job-" + a.outcome + " job-" + a.pricing_model},
      `#${a.attempt} ${a.pricing_model} ${a.outcome}`);
    bar.style.marginLeft = (100 * (t(a.started_at) - start) / span).toFixed(2) + "%";
    bar.style.width = Math.max(100 * (t(a.ended_at) - t(a.started_at)) / span, 2).toFixed(2) + "%";
    bar.title = `${a.place} ${a.precision}: ${a.end_reason || a.launch_reason || ""}`;
    return el("div", {class: "job-row"}, bar);
  }));
}

async function showJob(job) {
  const box = document.getElementById("jobs-attempts");
  document.getElementById("jobs-drill").hidden = false;
  document.getElementById("jobs-drill-name").textContent = `${job.name} (${job.job_id})`;
  try {
    const data = await api(`jobs/${encodeURIComponent(job.job_id)}/attempts`);
    document.getElementById("jobs-timeline").replaceChildren(jobTimeline(data.items));
    renderTable(box, [
      {key: "attempt", label: "#", num: true}, {key: "place", label: "Where"}, {key: "pricing_model", label: "Pricing"},
      {key: "precision", label: "Precision"}, {key: "started_at", label: "Start"}, {key: "ended_at", label: "End"},
      {label: "Steps", fmt: r => `${r.steps_at_start} → ${r.steps_at_end ?? "…"}`},
      {label: "Estimated", num: true, fmt: r => fmtMoney(r.estimated, "USD")},
      {label: "Billed", num: true, fmt: r => (r.billed == null ? "not yet" : fmtMoney(r.billed, "USD"))},
      {key: "outcome", label: "Outcome"},
      {key: "launch_reason", label: "Why launched"}, {key: "end_reason", label: "Why it ended"},
    ], data, {emptyText: "No attempts."});
    document.getElementById("jobs-plan").textContent = data.plan || "";
  } catch (err) { showError(box, err); }
}

async function loadJobs() {
  const box = document.getElementById("jobs-table");
  try {
    const data = await api("jobs");
    const m = k => r => fmtMoney(r[k], "USD");
    renderTable(box, [
      {key: "name", label: "Job"}, {key: "team", label: "Team"}, {key: "project", label: "Project"},
      {key: "state", label: "State"}, {label: "Steps", fmt: r => `${r.steps_done} / ${r.steps_total}`},
      {key: "attempts", label: "Attempts", num: true}, {key: "spot_preemptions", label: "Preemptions", num: true},
      {label: "Estimated", num: true, fmt: m("estimated")},
      {label: "Billed", num: true, fmt: r => (r.billed == null ? "not yet" : fmtMoney(r.billed, "USD")
        + (r.fully_billed ? "" : " (partial)"))},
      {label: "All on-demand", num: true, fmt: m("ondemand")},
      {label: "Savings vs all on-demand", num: true, fmt: m("savings")},
      {key: "created_at", label: "Started"},
    ], data, {emptyText: "No training jobs yet.", onRow: showJob});
  } catch (err) { showError(box, err); }
}

async function loadJobShowback() {
  let box = document.getElementById("jobs-showback");
  if (!box) {  // below the jobs table: showback per team
    const table = document.getElementById("jobs-table");
    if (!table) return;
    box = el("div", {id: "jobs-showback"});
    table.after(el("h3", {}, "Showback per team"), box);
  }
  try {
    const data = await api("jobs/showback");
    const m = k => r => fmtMoney(r[k], "USD");
    renderTable(box, [
      {key: "team", label: "Team"}, {key: "jobs", label: "Jobs", num: true},
      {label: "Estimated", num: true, fmt: m("estimated")}, {label: "Billed", num: true, fmt: m("billed")},
      {label: "Known cost", num: true, fmt: m("known")}, {label: "All on-demand", num: true, fmt: m("ondemand")},
      {label: "Savings", num: true, fmt: m("savings")},
    ], data, {emptyText: "No training jobs yet."});
  } catch (err) { showError(box, err); }
}

document.addEventListener("DOMContentLoaded", () => { loadJobs(); loadJobShowback(); });
