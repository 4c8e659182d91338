// gpuplan web: draws the charts whose data the server put in <script type="application/json"> blocks,
// and registers the two small Alpine components (CSP build: no inline expressions are evaluated).
(function () {
  "use strict";

  function draw(root) {
    if (!window.Plotly) return;
    (root || document).querySelectorAll("[data-chart]").forEach(function (el) {
      var src = document.getElementById(el.getAttribute("data-chart"));
      if (!src) return;
      var spec = JSON.parse(src.textContent);
      window.Plotly.react(el, spec.data, spec.layout, { displaylogo: false, responsive: true });
      el.setAttribute("data-drawn", "1");
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { draw(ev.target); });

  document.addEventListener("alpine:init", function () {
    window.Alpine.data("busy", function () {
      return { running: false, start: function () { this.running = true; } };
    });
    window.Alpine.data("share", function () {
      return {
        copied: false,
        copy: function () {
          var input = this.$refs.link;
          var url = window.location.origin + input.getAttribute("data-path");
          input.value = url;
          var self = this;
          var done = function () { self.copied = true; };
          if (navigator.clipboard && window.isSecureContext) {
            navigator.clipboard.writeText(url).then(done, function () { input.select(); });
          } else {
            input.select();
            done();
          }
        },
      };
    });
  });
})();
