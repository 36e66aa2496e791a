// shortener: progressive enhancement only. Every page works without this
// script; with it, the shorten form answers in place (the server renders
// the same page it would for a plain POST; we swap its <main>), the copy
// button copies, and the trending list refreshes itself. No innerHTML is
// ever built from data: text goes through textContent.
"use strict";

function bindCopy(root) {
  root.querySelectorAll("button[data-copy]").forEach(function (btn) {
    var input = document.getElementById(btn.dataset.copy);
    var status = document.getElementById("copy-status");
    btn.hidden = false;
    btn.addEventListener("click", function () {
      var done = function () { if (status) status.textContent = "Copied " + input.value; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(input.value).then(done, function () { fallbackCopy(input); done(); });
      } else {
        fallbackCopy(input); done();
      }
    });
  });
}

function fallbackCopy(input) {
  input.focus();
  input.select();
  try { document.execCommand("copy"); } catch (e) { /* selected: the user can copy by hand */ }
}

function bindShorten(root) {
  var form = root.querySelector("form#shorten");
  if (!form) return;
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var btn = form.querySelector("button[type=submit]");
    btn.disabled = true;
    fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      headers: { "Accept": "text/html" },
      credentials: "same-origin"
    }).then(function (resp) {
      return resp.text();
    }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var next = doc.querySelector("main");
      if (!next) throw new Error("no page in the answer");
      var main = document.querySelector("main");
      main.replaceWith(next);
      enhance(next);
      // Focus what the answer is about, in this order: the first field
      // in error, the form's own error, the new link, the page's heading.
      var target = ["[aria-invalid=true]", "#form-error", "#result-h", "h1"].map(function (s) {
        return next.querySelector(s);
      }).filter(Boolean)[0];
      if (target) {
        if (!target.matches("input, select, textarea, [tabindex]")) target.setAttribute("tabindex", "-1");
        target.focus();
      }
    }).catch(function () {
      form.submit(); // the network or the answer failed us: let the browser post
    });
  });
}

function bindTrending(root) {
  var box = root.querySelector("#trending[data-live]");
  if (!box) return;
  var rows = box.querySelector("#trend-rows");
  var status = box.querySelector("#trend-status");
  var win = box.dataset.window;
  var refresh = function () {
    if (document.hidden) return;
    fetch("/api/v1/trending?window=" + encodeURIComponent(win) + "&limit=20", { headers: { "Accept": "application/json" } })
      .then(function (resp) {
        if (!resp.ok) throw new Error("trending: " + resp.status);
        return resp.json();
      })
      .then(function (data) {
        var items = data.links || data.items || [];
        var body = document.createElement("tbody");
        body.id = "trend-rows";
        items.forEach(function (it, i) {
          var tr = document.createElement("tr");
          var rank = cell(tr, String(i + 1)); rank.className = "num";
          var a = document.createElement("a");
          a.href = "/" + encodeURIComponent(it.code) + "+";
          a.textContent = it.code;
          cell(tr, "").appendChild(a);
          var host = document.createElement("span");
          host.className = "host";
          host.textContent = hostOf(it.url);
          var dest = cell(tr, ""); dest.className = "wrap"; dest.appendChild(host);
          var n = cell(tr, String(it.clicks)); n.className = "num";
          body.appendChild(tr);
        });
        if (items.length === 0) {
          var tr = document.createElement("tr");
          var td = cell(tr, "No clicks in this window yet."); td.colSpan = 4; td.className = "muted";
          body.appendChild(tr);
        }
        rows.replaceWith(body);
        rows = body;
        status.textContent = "Updated " + new Date().toLocaleTimeString() + (data.source ? ", served from " + data.source : "") + ".";
      })
      .catch(function () { status.textContent = "Could not refresh; retrying."; });
  };
  root.querySelectorAll(".tabs a[data-window]").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      win = a.dataset.window;
      box.dataset.window = win;
      root.querySelectorAll(".tabs a").forEach(function (o) { o.removeAttribute("aria-current"); });
      a.setAttribute("aria-current", "page");
      history.replaceState(null, "", a.href);
      refresh();
    });
  });
  setInterval(refresh, 5000);
}

function cell(tr, text) {
  var td = document.createElement("td");
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

function hostOf(u) {
  try { return new URL(u).host; } catch (e) { return u; }
}

function enhance(root) {
  bindCopy(root);
  bindShorten(root);
  bindTrending(root);
}

document.addEventListener("DOMContentLoaded", function () { enhance(document); });
