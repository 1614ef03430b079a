// The review page: counts, map and table of one staged release against the
// current one, and the promote / discard buttons. No libraries: the map is
// SVG in Web Mercator, drawn from the diff's GeoJSON.
(function () {
  "use strict";
  var app = document.getElementById("app");
  var layer = app.dataset.layer, release = app.dataset.release, token = app.dataset.token;
  var svg = document.getElementById("map");
  var NS = "http://www.w3.org/2000/svg";
  var W = svg.width.baseVal.value, H = svg.height.baseVal.value;
  // Geometry is drawn in local units: mercator (0..1) minus the origin O,
  // times S0 (pixels at the first fit), so that SVG's single-precision
  // numbers stay exact enough at any zoom. view: zoom k and translation.
  var O = [0, 0], S0 = 1;
  var view = { k: 1, tx: 0, ty: 0 };
  var shapes = {}; // feature id -> [svg elements]

  function merc(p) {
    var lat = Math.max(-85, Math.min(85, p[1])) * Math.PI / 180;
    return [(p[0] + 180) / 360, (1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2];
  }
  function unmerc(x, y) {
    var lon = x * 360 - 180;
    var lat = Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180 / Math.PI;
    return [lon, lat];
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(v) { return v === null || v === undefined ? "null" : JSON.stringify(v); }
  function text(tag, s, cls) { var e = document.createElement(tag); e.textContent = s; if (cls) e.className = cls; return e; }

  var world = el("g", {}, svg);  // drawn in mercator units, transformed by view
  var base = null;

  function local(p) { var m = merc(p); return [(m[0] - O[0]) * S0, (m[1] - O[1]) * S0]; }
  function screenToMerc(px, py) { return [O[0] + (px - view.tx) / view.k / S0, O[1] + (py - view.ty) / view.k / S0]; }
  function applyView() {
    world.setAttribute("transform", "translate(" + view.tx + "," + view.ty + ") scale(" + view.k + ")");
    // Keep point sizes constant on screen (strokes do not scale).
    var circles = world.querySelectorAll("circle");
    for (var i = 0; i < circles.length; i++) circles[i].setAttribute("r", 4 / view.k);
    var all = world.querySelectorAll("path,circle");
    for (var j = 0; j < all.length; j++) all[j].setAttribute("vector-effect", "non-scaling-stroke");
    scheduleBasemap();
  }

  var basemapTimer = null;
  function scheduleBasemap() {
    if (app.dataset.basemap !== "true") return;
    clearTimeout(basemapTimer);
    basemapTimer = setTimeout(function () {
      var a = screenToMerc(0, 0), b = screenToMerc(W, H);
      var nw = unmerc(a[0], a[1]), se = unmerc(b[0], b[1]);
      var url = "/basemap.png?bbox=" + [nw[0], se[1], se[0], nw[1]].map(function (v) { return v.toFixed(7); }).join(",") + "&w=" + W + "&h=" + H;
      if (!base) {
        base = el("image", { id: "basemap", x: 0, y: 0, width: W, height: H, preserveAspectRatio: "none" });
        // data-loaded: the browser has drawn this view's basemap.
        base.addEventListener("load", function () { base.setAttribute("data-loaded", base.getAttribute("href")); });
        svg.insertBefore(base, world);
      }
      base.setAttribute("href", url);
    }, 150);
  }

  function ringPath(ring) {
    var d = "";
    for (var i = 0; i < ring.length; i++) { var m = local(ring[i]); d += (i ? "L" : "M") + m[0].toFixed(2) + " " + m[1].toFixed(2); }
    return d;
  }
  function draw(f) {
    var g = f.geometry, role = f.properties.role, out = [];
    var cls = role;
    function path(d, line) { out.push(el("path", { d: d, "class": cls + (line ? " line" : ""), "fill-rule": "evenodd" }, world)); }
    function point(p) { var m = local(p); out.push(el("circle", { cx: m[0].toFixed(2), cy: m[1].toFixed(2), r: 4, "class": cls }, world)); }
    switch (g.type) {
      case "Point": point(g.coordinates); break;
      case "MultiPoint": g.coordinates.forEach(point); break;
      case "LineString": path(ringPath(g.coordinates), true); break;
      case "MultiLineString": g.coordinates.forEach(function (l) { path(ringPath(l), true); }); break;
      case "Polygon": path(g.coordinates.map(function (r) { return ringPath(r) + "Z"; }).join(""), false); break;
      case "MultiPolygon": path(g.coordinates.map(function (p) { return p.map(function (r) { return ringPath(r) + "Z"; }).join(""); }).join(""), false); break;
    }
    out.forEach(function (e) {
      var t = el("title", {}, e); t.textContent = f.id + " (" + role + ")";
      e.addEventListener("click", function () { select(f.id, true); });
    });
    if (role !== "current") (shapes[f.id] = shapes[f.id] || []).push.apply(shapes[f.id], out);
  }

  function select(id, scroll) {
    var prev = document.querySelectorAll(".sel");
    for (var i = 0; i < prev.length; i++) prev[i].classList.remove("sel");
    (shapes[id] || []).forEach(function (e) { e.classList.add("sel"); });
    var row = document.getElementById("row-" + id);
    if (row) { row.classList.add("sel"); if (scroll) row.scrollIntoView({ block: "center" }); }
  }

  function fit(bbox) {
    var a = merc([bbox[0], bbox[3]]), b = merc([bbox[2], bbox[1]]);
    var w = Math.max(b[0] - a[0], 1e-9), h = Math.max(b[1] - a[1], 1e-9);
    var s = 0.9 * Math.min(W / w, H / h);
    if (!isFinite(s) || s > 1e9) s = 1e9;
    O = [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2]; S0 = s;
    view = { k: 1, tx: W / 2, ty: H / 2 };
  }

  // Pan and zoom.
  var drag = null;
  svg.addEventListener("pointerdown", function (e) { drag = { x: e.clientX, y: e.clientY, tx: view.tx, ty: view.ty }; });
  svg.addEventListener("pointermove", function (e) {
    if (!drag) return;
    view.tx = drag.tx + e.clientX - drag.x; view.ty = drag.ty + e.clientY - drag.y; applyView();
  });
  svg.addEventListener("pointerup", function () { drag = null; });
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
    var f = e.deltaY < 0 ? 1.25 : 0.8;
    view.tx = px - (px - view.tx) * f; view.ty = py - (py - view.ty) * f; view.k *= f; applyView();
  }, { passive: false });

  function counts(s) {
    var box = document.getElementById("counts");
    box.textContent = "";
    [["added", s.added], ["removed", s.removed], ["changed", s.changed], ["unchanged", s.unchanged]].forEach(function (c) {
      var d = document.createElement("div"); d.className = c[0]; d.id = "count-" + c[0];
      d.appendChild(text("b", String(c[1]))); d.appendChild(document.createTextNode(c[0])); box.appendChild(d);
    });
    if (s.tolerance_m) box.appendChild(text("span", "geometry compared within " + (s.tolerance_m * 1000) + " mm", "hint"));
  }

  function table(changes) {
    var body = document.getElementById("rows");
    changes.forEach(function (c) {
      var tr = document.createElement("tr"); tr.id = "row-" + c.id;
      tr.appendChild(text("td", c.change, "chg-" + c.change));
      var idc = document.createElement("td"); idc.appendChild(text("code", c.id)); tr.appendChild(idc);
      var what = document.createElement("td");
      if (c.change !== "changed") what.textContent = c.change;
      else {
        if (c.moved_m !== undefined) what.appendChild(text("span", "geometry moved " + (c.moved_m >= 1 ? c.moved_m.toFixed(2) + " m" : (c.moved_m * 1000).toFixed(1) + " mm"), "prop"));
        else if (/reshaped/.test(c.what)) what.appendChild(text("span", "geometry reshaped", "prop"));
        (c.properties || []).forEach(function (p) {
          var s = document.createElement("span"); s.className = "prop";
          s.appendChild(text("b", p.name + ": ")); s.appendChild(text("span", fmt(p.from), "from"));
          s.appendChild(document.createTextNode(" \u2192 ")); s.appendChild(text("span", fmt(p.to), "to"));
          what.appendChild(s);
        });
      }
      tr.appendChild(what);
      tr.addEventListener("click", function () { select(c.id, false); });
      body.appendChild(tr);
    });
  }

  var promote = document.getElementById("promote"), discard = document.getElementById("discard");
  var outcome = document.getElementById("outcome"), stateEl = document.getElementById("state");
  function decide(action) {
    promote.disabled = discard.disabled = true;
    outcome.textContent = action === "promote" ? "Promoting\u2026" : "Discarding\u2026";
    fetch("/api/" + action + "/" + encodeURIComponent(layer) + "/" + encodeURIComponent(release), {
      method: "POST", headers: { "X-Review-Token": token }
    }).then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
      .then(function (r) {
        if (!r.ok) { outcome.textContent = "Failed: " + r.body.error; promote.disabled = discard.disabled = false; return; }
        stateEl.textContent = r.body.state; stateEl.className = "state " + r.body.state;
        outcome.textContent = r.body.action === "promoted"
          ? "Promoted: " + release + " is now the current release of " + layer + "."
          : "Discarded: " + release + " stays in the catalogue but is no longer staged.";
        outcome.id = "outcome"; outcome.dataset.done = r.body.action;
      })
      .catch(function (e) { outcome.textContent = "Failed: " + e; promote.disabled = discard.disabled = false; });
  }
  promote.addEventListener("click", function () { decide("promote"); });
  discard.addEventListener("click", function () { decide("discard"); });

  fetch("/api/diff/" + encodeURIComponent(layer) + "/" + encodeURIComponent(release))
    .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(function (d) {
      counts(d.summary);
      table(d.changes);
      if (d.truncated) { var t = document.getElementById("truncated"); t.hidden = false; t.textContent = "Showing the first " + d.changes.length + " changes; release diff --out lists them all."; }
      var order = { current: 0, removed: 1, old: 2, added: 3, "new": 4 };
      fit(d.bbox || [112, -44, 154, -10]);
      d.map.features.sort(function (a, b) { return order[a.properties.role] - order[b.properties.role]; }).forEach(draw);
      applyView();
      var open = app.dataset.state === "staged";
      promote.disabled = discard.disabled = !open;
      app.dataset.loaded = "true";
    })
    .catch(function (e) { document.getElementById("counts").textContent = "Could not compare: " + e.message; });
})();
