// Loaded between RequireJS and the Jupyter widget manager on pages with widgets: the widget manager's fonts are
// resolved through RequireJS, so point it at this site's own copy instead of a path relative to the page.
(function () {
  var root = document.documentElement.dataset.content_root || "./";
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": root + "_static/jupyter-widgets" } });
})();
