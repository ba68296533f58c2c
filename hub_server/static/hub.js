// Progressive enhancement only: the pages work without it (every snippet is shown, nothing to copy).
document.documentElement.classList.add("js");

document.addEventListener("click", (event) => {
  const tab = event.target.closest("[data-tab]");
  if (tab) {
    const panel = tab.closest(".panel");
    panel.querySelectorAll("[data-tab]").forEach((t) => {
      const on = t === tab;
      t.classList.toggle("active", on);
      t.setAttribute("aria-selected", String(on));
    });
    panel.querySelectorAll("[data-pane]").forEach((p) => p.classList.toggle("active", p.dataset.pane === tab.dataset.tab));
    return;
  }
  const copy = event.target.closest("[data-copy]");
  if (copy) {
    const text = document.getElementById(copy.dataset.copy).innerText.trim();
    const done = () => { copy.textContent = "Copied"; copy.classList.add("done"); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done);
    } else {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      done();
    }
  }
});
