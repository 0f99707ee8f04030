// Folio console: polls api/overview and draws records in/s, records out/s
// and total group lag over the last minutes. Records out are the records
// the Broker's readers were handed (o.out "reads": topics' recordsOut) or,
// for a read-only console beside another process, an estimate from the
// rise of consumer groups' committed offsets (o.out "committed"). It writes text only (textContent), never
// markup.
(function () {
  "use strict";
  var canvas = document.getElementById("chart");
  if (!canvas) { return; }
  var status = document.getElementById("live-status");
  var rates = document.getElementById("live-rates");
  var every = 2000, keep = 150; // 5 minutes of points
  var points = [], last = null;

  function sum(list, field) {
    var s = 0;
    (list || []).forEach(function (x) { s += x[field] || 0; });
    return s;
  }

  function poll() {
    fetch("api/overview", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (o) {
      var own = (o.topics || []).filter(function (t) { return !t.internal; });
      var out = o.out === "reads" ? sum(own, "recordsOut") : sum(o.groups, "committed");
      var cur = { t: o.time, leo: sum(own, "logEndOffset"), out: out, lag: sum(o.groups, "lag") };
      if (last && cur.t > last.t) {
        var dt = (cur.t - last.t) / 1000;
        points.push({ t: cur.t, inRate: Math.max(cur.leo - last.leo, 0) / dt, outRate: Math.max(cur.out - last.out, 0) / dt, lag: cur.lag });
        if (points.length > keep) { points.shift(); }
        var p = points[points.length - 1];
        rates.textContent = "now: in " + p.inRate.toFixed(1) + "/s, out " + p.outRate.toFixed(1) + "/s";
      }
      last = cur;
      updateLag(o.groups || []);
      status.textContent = o.error ? "error: " + o.error : "updated " + new Date(o.time).toLocaleTimeString();
      draw();
    }).catch(function (e) { status.textContent = "poll failed: " + e; });
  }

  // updateLag refreshes each group's lag on the page: the total and each
  // partition's row (matched on data attributes, never by building a
  // selector from names).
  function updateLag(groups) {
    groups.forEach(function (g) {
      document.querySelectorAll("article.group").forEach(function (a) {
        if (a.dataset.group !== g.name) { return; }
        var el = a.querySelector(".total-lag");
        if (el) { el.textContent = String(g.lag); }
        a.querySelectorAll("tr[data-topic]").forEach(function (tr) {
          (g.partitions || []).forEach(function (p) {
            if (tr.dataset.topic !== p.topic || tr.dataset.partition !== String(p.partition)) { return; }
            tr.querySelector("td.committed").textContent = String(p.committed);
            tr.querySelector("td.hw").textContent = String(p.highWatermark);
            tr.querySelector("td.lag").textContent = String(p.lag);
          });
        });
      });
    });
  }

  function draw() {
    var ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 40;
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px sans-serif";
    ctx.fillStyle = "#52606d";
    if (points.length < 2) { ctx.fillText("collecting…", pad, h / 2); return; }
    var maxRate = 1, maxLag = 1;
    points.forEach(function (p) { maxRate = Math.max(maxRate, p.inRate, p.outRate); maxLag = Math.max(maxLag, p.lag); });
    var x = function (i) { return pad + (w - 2 * pad) * i / (keep - 1); };
    function line(color, value, max) {
      ctx.strokeStyle = color; ctx.lineWidth = 1.5; ctx.beginPath();
      points.forEach(function (p, i) {
        var y = h - pad / 2 - (h - pad) * value(p) / max;
        if (i === 0) { ctx.moveTo(x(i), y); } else { ctx.lineTo(x(i), y); }
      });
      ctx.stroke();
    }
    line("#1c7ed6", function (p) { return p.inRate; }, maxRate);
    line("#2f9e44", function (p) { return p.outRate; }, maxRate);
    line("#e8590c", function (p) { return p.lag; }, maxLag);
    ctx.fillStyle = "#52606d";
    ctx.fillText(maxRate.toFixed(1) + "/s", 2, pad / 2 + 4);
    ctx.fillText(String(maxLag), w - pad + 2, pad / 2 + 4);
  }

  poll();
  setInterval(poll, every);
})();
