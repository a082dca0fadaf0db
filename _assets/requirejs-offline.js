// Loaded between RequireJS and the Jupyter widget manager, on pages with widgets only.
(function () {
  // 1. The widget manager's fonts are resolved through RequireJS: point it at this site's own copy instead of a path
  //    relative to the page (or a CDN).
  var root = document.documentElement.dataset.content_root || "./";
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": root + "_static/jupyter-widgets" } });
  // 2. Widget labels are typeset with the MathJax 2 API (MathJax.Hub.Queue); the site runs MathJax 3. Bridge the one
  //    call the widgets make, so a label with math is typeset instead of throwing.
  window.addEventListener("DOMContentLoaded", function () {
    if (window.MathJax && !window.MathJax.Hub) {
      window.MathJax.Hub = {
        Queue: function (job) {
          var element = Array.isArray(job) ? job[2] : undefined;
          if (element && window.MathJax.typesetPromise) { window.MathJax.typesetPromise([element]); }
        },
      };
    }
  });
})();
