// Swagger UI for /api/docs, from the vendored bundle (static/vendor, VENDOR.md): no CDN, no inline script (CSP).
"use strict";
window.addEventListener("DOMContentLoaded", function () {
  var el = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({ url: el.dataset.specUrl, dom_id: "#swagger-ui", deepLinking: true,
                                validatorUrl: null, tryItOutEnabled: false });
});
