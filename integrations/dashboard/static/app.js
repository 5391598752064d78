// ampflow dashboard: local and relative times, the live event stream, and
// a page that refreshes its own content when what it shows changes.
"use strict";
(function () {
  var body = document.body;
  var page = body.dataset.page || "";
  var taskID = body.dataset.task || "";
  var content = document.getElementById("content");
  var announce = document.getElementById("announce");

  // Times: each <time datetime> shows the viewer's zone, and "4 min ago".
  var rtf = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }) : null;
  function relative(date) {
    var s = (date.getTime() - Date.now()) / 1000;
    var steps = [[60, "second"], [60, "minute"], [24, "hour"], [7, "day"], [4.35, "week"], [12, "month"], [Infinity, "year"]];
    var v = s;
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(v) < steps[i][0]) {
        var n = Math.round(v);
        return rtf ? rtf.format(n, steps[i][1]) : n + " " + steps[i][1] + "s";
      }
      v /= steps[i][0];
    }
    return "";
  }
  function times(root) {
    var els = (root || document).querySelectorAll("time[datetime]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) continue;
      if (d.getUTCFullYear() < 2000) { el.textContent = "–"; continue; }
      el.title = d.toLocaleString();
      el.textContent = relative(d) + " (" + d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) + ")";
    }
  }
  times();
  setInterval(times, 15000);

  function say(msg) {
    if (!announce) return;
    announce.textContent = "";
    setTimeout(function () { announce.textContent = msg; }, 50);
  }

  // A decision that needs a note is not sent without one.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest && ev.target.closest("button[data-note-required]");
    if (!b) return;
    var note = b.form && b.form.querySelector("textarea[name=note]");
    if (note && note.value.trim() === "") {
      ev.preventDefault();
      note.setCustomValidity(b.textContent + " needs a note.");
      note.reportValidity();
      note.focus();
      note.addEventListener("input", function () { note.setCustomValidity(""); }, { once: true });
    }
  });

  // Bodies on demand: an opened timeline entry fetches its record.
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.open || !d.dataset || !d.dataset.record || d.dataset.loaded) return;
    d.dataset.loaded = "1";
    var box = d.querySelector(".body");
    fetch("/records/" + encodeURIComponent(d.dataset.record), { headers: { "X-Dashboard-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { box.innerHTML = html; times(box); })
      .catch(function () { delete d.dataset.loaded; });
  }, true);

  // Refresh: fetch this page's content again and swap it in, keeping
  // open details, typed text and focus.
  var timer = null, busy = false, again = false;
  function refresh() {
    if (timer) return;
    timer = setTimeout(run, 150);
  }
  function run() {
    timer = null;
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Dashboard-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(swap)
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  function swap(html) {
    var open = {}, values = {}, focus = document.activeElement && document.activeElement.id;
    content.querySelectorAll("details[open]").forEach(function (d) {
      var key = d.dataset.record || (d.querySelector("summary") || {}).textContent;
      open[key] = d.querySelector(".body") ? d.querySelector(".body").innerHTML : true;
    });
    content.querySelectorAll("textarea[id], input[id]:not([type=hidden])").forEach(function (el) { values[el.id] = el.value; });
    var closed = document.getElementById("closed");
    var keep = closed ? closed.innerHTML : null;
    content.innerHTML = html;
    content.querySelectorAll("details").forEach(function (d) {
      var key = d.dataset.record || (d.querySelector("summary") || {}).textContent;
      if (open[key]) {
        d.open = true;
        if (d.dataset.record && typeof open[key] === "string") { d.querySelector(".body").innerHTML = open[key]; d.dataset.loaded = "1"; }
      }
    });
    Object.keys(values).forEach(function (id) { var el = document.getElementById(id); if (el) el.value = values[id]; });
    if (keep !== null && document.getElementById("closed")) document.getElementById("closed").innerHTML = keep;
    if (focus && document.getElementById(focus)) document.getElementById(focus).focus();
    times(content);
  }

  // A decision closed elsewhere leaves with who closed it and where.
  function closedDecision(e) {
    var cards = document.querySelectorAll('[data-decision-id="' + CSS.escape(e.id) + '"]');
    if (!cards.length) return false;
    var who = e.by ? "Decided by " + e.by + (e.channel ? " on " + e.channel : "") + ": " + (e.label || e.option) : "Closed";
    var msg = e.id + " — " + who;
    cards.forEach(function (c) { c.remove(); });
    var list = document.getElementById("closed");
    if (list) {
      var p = document.createElement("p");
      p.className = "closed";
      p.setAttribute("data-closed-id", e.id);
      p.textContent = msg;
      list.prepend(p);
      setTimeout(function () { p.remove(); }, 60000);
    }
    say(msg);
    return true;
  }

  function relevant(type, e) {
    switch (page) {
      case "decisions":
        if (type === "decision-closed") { if (closedDecision(e)) refresh(); return; }
        if (type === "decision-opened") return refresh();
        if (type === "task" && document.querySelector('[data-subject="' + CSS.escape(e.task_id) + '"]')) return refresh();
        if (type === "subject" && document.querySelector('[data-subject="' + CSS.escape(e.subject) + '"]')) return refresh();
        return;
      case "tasks":
        if (type === "task") return refresh();
        return;
      case "gates":
        if (type === "subject" || type === "decision-opened" || type === "decision-closed") return refresh();
        return;
      case "leases":
      case "mesh":
        if (type === "mesh") return refresh();
        return;
      case "agents":
        if (type === "mesh" || type === "subject") return refresh();
        return;
      default:
        if (!taskID) return;
        if ((type === "task" || type === "record" || type === "refusal") && e.task_id === taskID) return refresh();
        if (type === "decision-closed" && e.subject === taskID) { closedDecision(e); return refresh(); }
        if (type === "decision-opened" && e.subject === taskID) return refresh();
    }
  }

  var live = document.getElementById("live");
  function state(s, text) { if (live) { live.dataset.state = s; live.textContent = text; } }
  if (window.EventSource && live) {
    var es = new EventSource("/events");
    es.addEventListener("open", function () { state("live", "live"); });
    es.addEventListener("error", function () { state("down", "reconnecting…"); });
    es.addEventListener("reset", function () { state("live", "live"); refresh(); });
    es.addEventListener("signed_out", function () {
      es.close();
      state("down", "signed out");
      window.location.assign("/signin?next=" + encodeURIComponent(window.location.pathname + window.location.search));
    });
    ["task", "record", "refusal", "subject", "mesh", "decision-opened", "decision-closed"].forEach(function (t) {
      es.addEventListener(t, function (m) {
        var e;
        try { e = JSON.parse(m.data); } catch (x) { return; }
        relevant(t, e);
      });
    });
  }
  var flash = document.getElementById("flash");
  if (flash) flash.focus();
})();
