/* LatencyLab dashboard: mounts the server-built plotly figures, sorts and filters tables, and
   keeps progress bars of queued and running jobs live by polling a small JSON endpoint. */
(function () {
  "use strict";

  var PLOT_CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  var POLL_MS = 1000;

  // -- figures: <div data-figure><script type="application/json">{data, layout}</script></div> --
  function renderFigures(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("[data-figure]:not([data-rendered])").forEach(function (el) {
      var script = el.querySelector('script[type="application/json"]');
      if (!script) return;
      var fig = JSON.parse(script.textContent);
      el.removeChild(script);
      el.setAttribute("data-rendered", "1");
      window.Plotly.newPlot(el, fig.data, fig.layout, PLOT_CONFIG);
    });
  }

  // -- tables: click a header to sort; a search box and a type select filter the rows ---------
  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? NaN : "";
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    return numeric ? (raw === "" ? NaN : parseFloat(raw)) : raw.toLowerCase();
  }

  function initSorting(table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, index) {
      if (!th.hasAttribute("data-sort")) return;
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-sort") === "num";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
          if (numeric) {
            // Empty cells (fused operators, missing values) stay at the bottom either way.
            if (isNaN(x) && isNaN(y)) return 0;
            if (isNaN(x)) return 1;
            if (isNaN(y)) return -1;
            return ascending ? x - y : y - x;
          }
          return ascending ? x.localeCompare(y) : y.localeCompare(x);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  function initFilters(root) {
    var tables = {};
    root.querySelectorAll("[data-filter-for], [data-type-filter-for]").forEach(function (control) {
      var id = control.getAttribute("data-filter-for") || control.getAttribute("data-type-filter-for");
      tables[id] = true;
      control.addEventListener("input", function () { applyFilter(id); });
    });
    Object.keys(tables).forEach(applyFilter);
  }

  function applyFilter(id) {
    var table = document.getElementById(id);
    if (!table) return;
    var text = document.querySelector('[data-filter-for="' + id + '"]');
    var type = document.querySelector('[data-type-filter-for="' + id + '"]');
    var needle = text ? text.value.trim().toLowerCase() : "";
    var wanted = type ? type.value : "";
    var shown = 0, total = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      total += 1;
      var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) !== -1) &&
               (!wanted || row.getAttribute("data-op-type") === wanted);
      row.hidden = !ok;
      if (ok) shown += 1;
    });
    var count = document.querySelector('[data-count-for="' + id + '"]');
    if (count) count.textContent = shown === total ? total + " rows" : shown + " of " + total + " rows";
  }

  function initTables(root) {
    root.querySelectorAll("table.sortable").forEach(initSorting);
    initFilters(root);
  }

  // -- live progress --------------------------------------------------------------------------
  function formatMs(v) {
    if (v === null || v === undefined) return "";
    return v < 1 ? v.toFixed(3) : v < 100 ? v.toFixed(2) : v.toFixed(1);
  }

  function activeBars() {
    return document.querySelectorAll('.progress[data-job-id][data-active="1"]');
  }

  function update(job) {
    // a job that succeeded is done, whatever its last progress report said (a run may end at 45 %)
    var percent = job.state === "succeeded" ? 100 : Math.round(job.progress * 100);
    document.querySelectorAll('.progress[data-job-id="' + job.id + '"]').forEach(function (bar) {
      var fill = bar.querySelector(".fill");
      if (fill) fill.style.width = percent + "%";
      bar.setAttribute("aria-valuenow", String(percent));
      var label = bar.querySelector(".progress-label");
      if (label) label.textContent = job.finished ? job.state : percent + "%" + (job.message ? " · " + job.message : "");
      if (job.finished) {
        bar.setAttribute("data-active", "0");
        if (job.state !== "succeeded") bar.classList.add("failed");
        var resultUrl = bar.getAttribute("data-result-url");
        if (resultUrl) loadResult(resultUrl);
      }
    });
    document.querySelectorAll('[data-state-for="' + job.id + '"]').forEach(function (badge) {
      badge.textContent = job.state;
      badge.className = "badge state-" + job.state;
    });
    var ownPage = document.querySelector('#job-progress[data-job-id="' + job.id + '"]');
    var hint = document.getElementById("progress-hint");
    if (ownPage && hint && job.state === "running" && hint.getAttribute("data-state") !== "running") {
      // the page was drawn while the job waited in the queue: it is no longer waiting
      hint.setAttribute("data-state", "running");
      hint.textContent = hint.getAttribute("data-running") || "Measuring on the device. This page updates by itself.";
    }
    if (job.finished) {
      document.querySelectorAll('[data-median-for="' + job.id + '"]').forEach(function (cell) {
        cell.textContent = formatMs(job.median_ms);
      });
      var cancel = document.getElementById("cancel-form");
      if (cancel && ownPage) cancel.remove();
      if (hint && ownPage) {
        hint.textContent = job.state === "succeeded" ? "Done." : "The job " + job.state + ".";
      }
      if (ownPage) refreshHead();
    }
  }

  // The page's head (state, attempts, started and finished times, its actions) was drawn while
  // the job was active: once it ends, it is taken from the page as it is now, so the page does
  // not go on saying "attempts 0". The progress card stays, saying how the job ended.
  function refreshHead() {
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var head = document.querySelector(".page-head");
        var freshHead = fresh.querySelector(".page-head");
        if (head && freshHead) head.replaceWith(document.importNode(freshHead, true));
        // and why it failed, which the page says below its head
        var failure = fresh.getElementById("failure");
        var newHead = document.querySelector(".page-head");
        if (failure && newHead && !document.getElementById("failure")) {
          newHead.insertAdjacentElement("afterend", document.importNode(failure, true));
        }
      })
      .catch(function () { /* the bar and the hint already say how it ended */ });
  }

  function loadResult(url) {
    var target = document.getElementById("job-result");
    if (!target) return;
    fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        target.innerHTML = html;
        renderFigures(target);
        initTables(target);
      })
      .catch(function () { window.location.reload(); });
  }

  function poll() {
    var bars = activeBars();
    if (!bars.length) return;
    var ids = {};
    bars.forEach(function (b) { ids[b.getAttribute("data-job-id")] = true; });
    var url = document.body.getAttribute("data-progress-url") + "?ids=" + Object.keys(ids).join(",");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (body) { body.jobs.forEach(update); })
      .catch(function () { /* a missed poll is retried on the next tick */ })
      .then(function () { if (activeBars().length) window.setTimeout(poll, POLL_MS); });
  }

  // Disable the options of a select that some chosen device lacks (its attribute ``attr`` lists
  // what it offers, space-separated); the empty option (the device's default) always stays.
  function narrowChoices(select, chosen, attr) {
    if (!select) return;
    Array.prototype.forEach.call(select.options, function (opt) {
      opt.disabled = opt.value !== "" && chosen.some(function (cb) {
        return (cb.getAttribute(attr) || "").split(" ").indexOf(opt.value) < 0;
      });
    });
    if (select.selectedOptions.length && select.selectedOptions[0].disabled) select.value = "";
  }

  // The submit form offers only the settings every chosen device supports: each device's
  // checkbox carries what its backend declared (data-precisions, data-max-threads,
  // data-pins-cores, data-delegates, data-core-clusters, data-cools-down); a device that
  // declared nothing restricts nothing. The server checks again.
  function narrowSettings(form) {
    var chosen = Array.prototype.filter.call(
      form.querySelectorAll('#devices-list input[type="checkbox"]'),
      function (cb) { return cb.checked && cb.hasAttribute("data-precisions"); }
    );
    var precision = form.querySelector('select[name="precision"]');
    var threads = form.querySelector('input[name="threads"]');
    var cores = form.querySelector('input[name="cores"]');
    if (precision) {
      Array.prototype.forEach.call(precision.options, function (opt) {
        opt.disabled = chosen.some(function (cb) {
          return cb.getAttribute("data-precisions").split(" ").indexOf(opt.value) < 0;
        });
      });
      if (precision.selectedOptions.length && precision.selectedOptions[0].disabled) {
        var first = Array.prototype.find.call(precision.options, function (o) { return !o.disabled; });
        if (first) precision.value = first.value;
      }
    }
    if (threads) {
      var limits = chosen.map(function (cb) { return parseInt(cb.getAttribute("data-max-threads"), 10); });
      if (limits.length) threads.max = String(Math.min.apply(null, limits));
      else threads.removeAttribute("max");
    }
    var coldRuns = form.querySelector('input[name="cold_runs"]');
    if (coldRuns) {
      // The page's own bound (what any online device measures) comes back when no device is chosen.
      if (!coldRuns.hasAttribute("data-offered-max")) coldRuns.setAttribute("data-offered-max", coldRuns.max);
      var colds = chosen.map(function (cb) { return parseInt(cb.getAttribute("data-max-cold-runs") || "1", 10); });
      var coldMax = colds.length ? Math.min.apply(null, colds) : parseInt(coldRuns.getAttribute("data-offered-max"), 10);
      if (!isNaN(coldMax)) {
        coldRuns.max = String(coldMax);
        if (parseInt(coldRuns.value, 10) > coldMax) coldRuns.value = String(coldMax);
      }
      coldRuns.title = coldMax === 1 && colds.length ? "A chosen device measures the one cold start of its run" : "";
    }
    var cluster = form.querySelector('select[name="core_cluster"]');
    narrowChoices(form.querySelector('select[name="delegate"]'), chosen, "data-delegates");
    narrowChoices(cluster, chosen, "data-core-clusters");
    var byCluster = cluster !== null && cluster.value !== "";
    if (cores) {
      var noPinning = chosen.some(function (cb) { return cb.getAttribute("data-pins-cores") !== "true"; });
      cores.disabled = noPinning || byCluster;
      cores.title = noPinning ? "A chosen device cannot pin cores" : byCluster ? "Pinned to a core cluster" : "";
      if (cores.disabled) cores.value = "";
    }
    var noCooldown = chosen.some(function (cb) { return cb.getAttribute("data-cools-down") !== "true"; });
    ["cooldown_c", "cooldown_max_s"].forEach(function (name) {
      var input = form.querySelector('input[name="' + name + '"]');
      if (!input) return;
      input.disabled = noCooldown;
      input.title = noCooldown ? "A chosen device has no thermal cool-down" : "";
      if (noCooldown) input.value = "";
    });
  }

  // A submit-page checklist's filters: a text filter over each row's label and attributes
  // (data-search) and a kind select (data-kind); rows already checked always stay shown, so
  // nothing is submitted unseen. The filters are hidden without JavaScript.
  function initListFilters(root) {
    root.querySelectorAll("[data-list-tools]").forEach(function (tools) {
      var id = tools.getAttribute("data-list-tools");
      var list = document.getElementById(id);
      if (!list) return;
      var text = tools.querySelector("[data-list-filter]");
      var kind = tools.querySelector("[data-list-kind]");
      var count = tools.querySelector("[data-list-count]");
      function apply() {
        var words = text ? text.value.trim().toLowerCase().split(/\s+/).filter(Boolean) : [];
        var wanted = kind ? kind.value : "";
        var shown = 0, total = 0;
        list.querySelectorAll("label.check").forEach(function (row) {
          var cb = row.querySelector("input");
          var hay = (row.textContent + " " + ((cb && cb.getAttribute("data-search")) || "")).toLowerCase();
          var ok = (cb !== null && cb.checked) || (
            (!wanted || (cb !== null && cb.getAttribute("data-kind") === wanted)) &&
            words.every(function (w) { return hay.indexOf(w) !== -1; }));
          row.hidden = !ok;
          total += 1;
          if (ok) shown += 1;
        });
        if (count) count.textContent = shown === total ? total + " listed" : shown + " of " + total + " shown";
      }
      if (text) {
        text.addEventListener("input", apply);
        // Enter in a filter would send the whole form.
        text.addEventListener("keydown", function (e) { if (e.key === "Enter") e.preventDefault(); });
      }
      if (kind) kind.addEventListener("change", apply);
      tools.hidden = false;
      apply();
    });
  }

  function initSubmitForm(root) {
    var form = root.getElementById ? root.getElementById("submit-form") : null;
    if (!form) return;
    form.addEventListener("change", function () { narrowSettings(form); });
    narrowSettings(form);
    initListFilters(form);
  }

  // A select marked data-autosubmit sends its form when it changes (no inline handlers: the
  // Content-Security-Policy allows scripts from this origin only).
  function initAutosubmit(root) {
    root.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () { if (select.form) select.form.submit(); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    renderFigures(document);
    initTables(document);
    initSubmitForm(document);
    initAutosubmit(document);
    if (activeBars().length) window.setTimeout(poll, POLL_MS);
  });
})();
