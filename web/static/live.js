// Progressive enhancement for the inbox: re-read the lists whenever the store changes
// (server-sent events from /live) and count down the time left on requests that expire.
// Without JavaScript the pages work the same; they just need a reload.
(function () {
  "use strict";
  var region = document.querySelector("[data-live]");

  function left(ms) {
    if (ms <= 0) { return "expired"; }
    var s = Math.floor(ms / 1000), m = Math.floor(s / 60);
    s = s % 60;
    return m ? m + " min " + (s < 10 ? "0" : "") + s + " s left" : s + " s left";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      el.textContent = left(Date.parse(el.getAttribute("data-expires")) - now);
    });
  }

  function refresh() {
    fetch(region.getAttribute("data-live"), { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) { if (html !== null) { region.innerHTML = html; tick(); } });
  }

  if (region && window.EventSource) {
    var source = new EventSource("/live");
    source.addEventListener("changed", refresh);
    source.addEventListener("revoked", function () { source.close(); location.reload(); });
  }
  tick();
  setInterval(tick, 1000);
})();
