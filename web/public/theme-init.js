(function () {
  var c = null;
  try {
    c = localStorage.getItem('proxmops.theme');
  } catch (e) {}
  var dark = c ? c === 'dark' : window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
})();
