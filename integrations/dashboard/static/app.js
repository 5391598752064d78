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
    reapplyTranscript();
  }


  // Transcript: entries as the runs write them, the tool running now
  // and for how long, and the cost so far. Entries received are kept, so
  // a refresh of the page's content loses none.
  var got = [];
  function entryItem(e) {
    var li = document.createElement("li");
    li.className = "t-" + e.kind + (e.is_error ? " t-error" : "");
    li.dataset.seq = e.seq;
    li.dataset.run = e.role + "#" + e.run;
    li.dataset.kind = e.kind;
    li.dataset.tool = e.tool || "";
    li.dataset.at = e.at;
    li.dataset.cost = e.cost_usd;
    var head = document.createElement("span");
    head.className = "head";
    head.textContent = e.head;
    li.appendChild(head);
    li.appendChild(document.createTextNode(" "));
    var t = document.createElement("time");
    t.setAttribute("datetime", e.at);
    li.appendChild(t);
    if (e.text) {
      var pre = document.createElement("pre");
      pre.textContent = e.text;
      li.appendChild(pre);
    }
    times(li);
    return li;
  }
  function transcriptState() {
    var list = document.getElementById("transcript-entries");
    var now = document.getElementById("transcript-now");
    var cost = document.getElementById("transcript-cost");
    if (!list || !now) return;
    var running = null, last = null, costs = {};
    list.querySelectorAll("li[data-seq]").forEach(function (li) {
      last = li;
      costs[li.dataset.run] = parseFloat(li.dataset.cost) || 0;
      if (li.dataset.kind === "tool_call") running = li;
      else if (li.dataset.kind === "tool_result" || li.dataset.kind === "end" || li.dataset.kind === "result") running = null;
    });
    var sum = 0;
    Object.keys(costs).forEach(function (k) { sum += costs[k]; });
    if (cost) cost.textContent = "$" + sum.toFixed(4);
    var text;
    if (running) {
      var secs = Math.max(0, Math.round((Date.now() - new Date(running.dataset.at).getTime()) / 1000));
      var input = running.querySelector("pre") ? running.querySelector("pre").textContent : "";
      text = "Now: running " + (running.dataset.tool || "a tool") + (input ? " " + input.slice(0, 120) : "") + " for " + secs + " s";
    } else if (last && last.dataset.kind === "end") {
      text = "Now: no run; the last one ended.";
    } else if (last) {
      text = "Now: the agent is working (" + last.dataset.kind + ").";
    } else {
      return;
    }
    if (now.textContent !== text) now.textContent = text;
  }
  function applyEntry(e) {
    var list = document.getElementById("transcript-entries");
    if (!list || list.querySelector('[data-seq="' + e.seq + '"]')) return;
    list.appendChild(entryItem(e));
  }
  var tbox = document.getElementById("transcript");
  if (tbox && taskID && window.EventSource) {
    var tes = new EventSource("/tasks/" + encodeURIComponent(taskID) + "/transcript/events?after=" + encodeURIComponent(tbox.dataset.last || "0"));
    tes.addEventListener("entry", function (m) {
      var e;
      try { e = JSON.parse(m.data); } catch (x) { return; }
      got.push(e);
      if (got.length > 500) got.shift();
      applyEntry(e);
      transcriptState();
    });
    transcriptState();
    setInterval(transcriptState, 1000);
  }
  function reapplyTranscript() {
    got.forEach(applyEntry);
    transcriptState();
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
