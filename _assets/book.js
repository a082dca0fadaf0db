/* Small reader-facing fixes for the book's website (loaded on every page through html_js_files). */
(function () {
  "use strict";

  /* Search result snippets are cut from the pages' HTML before MathJax runs, so math reads "\(2/\eta\)".
     Turn the TeX of a snippet into plain text: delimiters dropped, common symbols as Unicode. */
  var SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", Delta: "Δ", epsilon: "ε", varepsilon: "ε", eta: "η",
    theta: "θ", kappa: "κ", lambda: "λ", Lambda: "Λ", mu: "μ", nu: "ν", pi: "π", rho: "ρ", sigma: "σ",
    Sigma: "Σ", tau: "τ", phi: "φ", varphi: "φ", psi: "ψ", omega: "ω", Omega: "Ω", xi: "ξ", zeta: "ζ",
    top: "ᵀ", nabla: "∇", partial: "∂", infty: "∞", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠",
    approx: "≈", sim: "∼", to: "→", rightarrow: "→", mapsto: "↦", in: "∈", cdot: "·", times: "×", pm: "±",
    sum: "Σ", prod: "Π", int: "∫", sqrt: "√", ell: "ℓ", odot: "⊙", otimes: "⊗", "|": "‖", ldots: "…",
    cdots: "⋯", dots: "…", langle: "⟨", rangle: "⟩", lVert: "‖", rVert: "‖", Vert: "‖", quad: " ", qquad: " "
  };
  function texToText(tex) {
    return tex
      .replace(/\\(?:frac|tfrac|dfrac)\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\([a-zA-Z]+|\|)/g, function (m, name) { return name in SYMBOLS ? SYMBOLS[name] : ""; })
      .replace(/\\[,;:! ]/g, " ")
      .replace(/[{}]/g, "")
      .replace(/_/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }
  function plainMath(text) {
    return text
      .replace(/\\\(([\s\S]*?)\\\)/g, function (m, tex) { return texToText(tex); })
      .replace(/\\\[([\s\S]*?)\\\]/g, function (m, tex) { return texToText(tex); })
      .replace(/\$\$([\s\S]*?)\$\$/g, function (m, tex) { return texToText(tex); });
  }
  function patchSearch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.bookPatched) return;
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) { return plainMath(original(htmlString, anchor)); };
    Search.htmlToText.bookPatched = true;
    /* Sphinx appends the summary of each hit unchecked; it is null when the hit's anchor names no section of the
       page's text (searches for "catapult" or "max-margin" threw "appendChild" errors): fall back to the page's
       whole text, then to an empty snippet. */
    var summary = Search.makeSearchSummary;
    if (summary) {
      Search.makeSearchSummary = function (htmlText, keywords, anchor) {
        var found = summary(htmlText, keywords, anchor) || (anchor ? summary(htmlText, keywords) : null);
        if (found) return found;
        var empty = document.createElement("p");
        empty.classList.add("context");
        return empty;
      };
    }
  }
  window.bookPlainMath = plainMath;

  /* The widget manager renders a snapshot's figure as <img alt="">: say what it is. */
  function labelWidgetImages() {
    document.querySelectorAll(".widget-snapshot img:not([alt]), .widget-snapshot img[alt='']").forEach(function (img) {
      img.alt = "Snapshot of the widget's figure at its initial settings (static: it does not recompute here)";
    });
  }

  /* The sidebar drawers give the focus back to their toggle button when they close, and focus shows the button's
     tooltip, which then stays up on a touch screen (over the search icon). Keep that focus for keyboard users;
     after a tap or a click, drop it once the drawer has closed. */
  var lastInput = "pointer";
  document.addEventListener("pointerdown", function () { lastInput = "pointer"; }, true);
  document.addEventListener("keydown", function () { lastInput = "keyboard"; }, true);
  function dropFocusAfterPointerClose() {
    ["pst-primary-sidebar-modal", "pst-secondary-sidebar-modal"].forEach(function (id) {
      var dialog = document.getElementById(id);
      if (!dialog) return;
      dialog.addEventListener("close", function () {
        if (lastInput !== "pointer") return;
        setTimeout(function () {
          var el = document.activeElement;
          if (el && el.classList && el.classList.contains("sidebar-toggle")) el.blur();
        }, 0);
      });
    });
  }

  /* The in-page contents drawer (phone): picking a section scrolls there, and the drawer should get out of the way
     (the primary drawer needs nothing: its links load another page). */
  function closeContentsOnPick() {
    var dialog = document.getElementById("pst-secondary-sidebar-modal");
    if (!dialog) return;
    dialog.addEventListener("click", function (event) {
      var link = event.target.closest && event.target.closest("a[href]");
      if (link && dialog.open && typeof dialog.close === "function") dialog.close();
    });
  }

  function onReady() {
    patchSearch();
    dropFocusAfterPointerClose();
    closeContentsOnPick();
    labelWidgetImages();
    var snapshots = document.querySelectorAll(".widget-snapshot");
    if (snapshots.length && window.MutationObserver) {
      var observer = new MutationObserver(labelWidgetImages);
      snapshots.forEach(function (s) { observer.observe(s, { childList: true, subtree: true }); });
    }
  }
  patchSearch();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", onReady);
  else onReady();
})();
