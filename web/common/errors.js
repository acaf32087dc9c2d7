// Shared by the report and compare pages; the binary inlines it at the burstscope:style marker in <head>,
// before any other script: every error, rejected promise and console.error lands in the hidden
// page-errors element, which the headless tests read (tests/report/check_report.py,
// tests/compare/check_compare_page.py).
(function () {
  var errors = [];
  window.__burstscopeErrors = errors;
  function flush() {
    var pre = document.getElementById('page-errors');
    if (pre) pre.textContent = errors.join('\n');
  }
  window.__burstscopeFlushErrors = flush;
  function record(msg) { errors.push(String(msg)); flush(); }
  window.addEventListener('error', function (e) {
    record('error: ' + (e.message || e) + (e.filename ? ' at ' + e.filename + ':' + e.lineno : '') +
           (e.error && e.error.stack ? '\n' + e.error.stack : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    record('unhandledrejection: ' + (e.reason && e.reason.stack ? e.reason.stack : e.reason));
  });
  var original = console.error;
  console.error = function () {
    record('console.error: ' + Array.prototype.map.call(arguments, function (a) {
      return a && a.stack ? a.stack : String(a);
    }).join(' '));
    return original.apply(console, arguments);
  };
  document.addEventListener('DOMContentLoaded', flush);
})();
