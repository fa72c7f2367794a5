// One annotation screen: keys and clicks give labels, each one POSTed and stored at once.
(function () {
  "use strict";
  const S = JSON.parse(document.getElementById("state").textContent);
  const RATINGS = S.task === "ratings";
  const textEl = document.getElementById("text");
  const statusEl = document.getElementById("status");
  const rows = Array.from(document.querySelectorAll(".question"));
  const pending = new Set();
  let focus = 0;

  // Offsets are stored as Python indexes them (code points); the DOM counts UTF-16 units.
  const toUnits = (cp) => Array.from(S.text).slice(0, cp).join("").length;
  const toPoints = (units) => Array.from(S.text.slice(0, units)).length;

  const question = (i) => Number(rows[i].dataset.question);
  const label = (q) => S.labels[String(q)];
  const given = (l) => !!l && (l.value !== null || l.cannot_judge);

  function status(message, error) {
    statusEl.textContent = message;
    statusEl.classList.toggle("error", !!error);
  }

  function post(body) {
    const request = fetch(S.api, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(Object.assign({ item: S.item }, body)),
    }).then(async (response) => {
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
      S.labels[String(data.label.question)] = data.label;
      render();
      status("saved Q-" + data.label.question);
    }).catch((error) => status("not saved: " + error.message, true))
      .finally(() => pending.delete(request));
    pending.add(request);
    return request;
  }

  // Rebuilt only when the marked span changes: a save landing must not drop a selection.
  let shownSpan;
  function renderText() {
    const l = label(question(focus));
    const key = l && l.span ? l.span.start + ":" + l.span.end : "";
    if (key === shownSpan) return;
    shownSpan = key;
    textEl.textContent = "";
    if (l && l.span) {
      const a = toUnits(l.span.start), b = toUnits(l.span.end);
      const mark = document.createElement("mark");
      mark.textContent = S.text.slice(a, b);
      textEl.append(S.text.slice(0, a), mark, S.text.slice(b));
    } else {
      textEl.textContent = S.text;
    }
  }

  function render() {
    rows.forEach((row, i) => {
      const l = label(question(i));
      row.classList.toggle("focused", i === focus);
      row.classList.toggle("given", given(l));
      row.querySelectorAll(".choice").forEach((button) => {
        const on = button.dataset.cannot ? !!(l && l.cannot_judge)
          : !!l && l.value === Number(button.dataset.value);
        button.classList.toggle("active", on);
      });
      const spanEl = row.querySelector(".span");
      spanEl.textContent = "";
      if (l && l.span) {
        const quote = document.createElement("q");
        quote.textContent = l.span.text;
        const clear = document.createElement("button");
        clear.type = "button";
        clear.textContent = "clear";
        clear.addEventListener("click", (e) => { e.stopPropagation(); post({ question: question(i), span: null }); });
        spanEl.append(RATINGS ? "rationale: " : "supporting span: ", quote, clear);
      }
    });
    renderText();
  }

  function move(i) {
    focus = Math.max(0, Math.min(rows.length - 1, i));
    rows[focus].scrollIntoView({ block: "nearest" });
    render();
  }

  async function go(url) {
    if (!url) return;
    await Promise.allSettled(Array.from(pending));
    window.location.href = url;
  }

  function next() {
    for (let k = 1; k <= rows.length; k++) {
      const i = (focus + k) % rows.length;
      if (!given(label(question(i)))) { move(i); return; }
    }
    go(S.next);
  }

  // The selection inside the text, as offsets into S.text (null when there is none).
  function selection() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!textEl.contains(range.startContainer) || !textEl.contains(range.endContainer)) return null;
    const before = document.createRange();
    before.selectNodeContents(textEl);
    before.setEnd(range.startContainer, range.startOffset);
    const a = before.toString().length, b = a + range.toString().length;
    if (b <= a) return null;
    return { start: toPoints(a), end: toPoints(b), text: S.text.slice(a, b) };
  }

  function storeSelection() {
    const span = selection();
    if (!span) return false;
    post({ question: question(focus), span: span });
    window.getSelection().removeAllRanges();
    return true;
  }

  textEl.addEventListener("mouseup", storeSelection);

  rows.forEach((row, i) => {
    row.addEventListener("click", () => move(i));
    row.querySelectorAll(".choice").forEach((button) => button.addEventListener("click", (e) => {
      e.stopPropagation();
      move(i);
      post(button.dataset.cannot ? { question: question(i), cannot_judge: true }
        : { question: question(i), value: Number(button.dataset.value) });
    }));
  });

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const q = question(focus);
    let value = null;
    if (RATINGS && /^[0-5]$/.test(e.key)) value = Number(e.key);
    if (!RATINGS && (e.key === "1" || e.key === "y")) value = 1;
    if (!RATINGS && (e.key === "0" || e.key === "n")) value = 0;
    // An answer by key moves on to the next question, so that "4" then "2" rates two
    // questions instead of overwriting the first (a rationale is selected before rating).
    const answered = value !== null || (RATINGS && e.key === "c");
    if (value !== null) post({ question: q, value: value });
    else if (RATINGS && e.key === "c") post({ question: q, cannot_judge: true });
    else if (e.key === "h") storeSelection();
    else if (e.key === "j" || e.key === "ArrowDown") move(focus + 1);
    else if (e.key === "k" || e.key === "ArrowUp") move(focus - 1);
    else if (e.key === "Enter") next();
    else if (e.key === "ArrowRight") go(S.next);
    else if (e.key === "ArrowLeft") go(S.prev);
    else return;
    if (answered && focus < rows.length - 1) move(focus + 1);
    e.preventDefault();
  });

  window.addEventListener("beforeunload", (e) => { if (pending.size) e.preventDefault(); });
  const first = rows.findIndex((row, i) => !given(label(question(i))));
  move(first < 0 ? 0 : first);
})();
