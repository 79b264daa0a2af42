// The build page's live output: what running test files, batches and hooks print, as they print
// it (GET /builds/:id/output, server-sent events). Each process gets a box that keeps the last
// KEEP characters of its output, so a process printing megabytes leaves the page as light as
// one printing a line; boxes are redrawn at most once a frame. Text only (textContent), its ANSI
// colours as spans (assets/ansi.js).
(() => {
  const root = document.querySelector('[data-live-output]');
  if (!root || !('EventSource' in window)) return;
  const list = root.querySelector('[data-live-output-list]');
  const KEEP = 64 * 1024;
  /** Boxes of processes that ended, kept (the oldest go first; their results are on the page). */
  const ENDED_KEPT = 6;
  const boxes = new Map();
  const ended = [];
  let frame = 0;

  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  };
  const title = (s) => {
    if (s.kind === 'file') return [s.path, `worker ${s.worker}${s.run > 1 ? ` · run ${s.run}` : ''}${s.attempt > 1 ? ` · attempt ${s.attempt}` : ''}`];
    if (s.kind === 'batch') return [`batch #${s.batch}`, `worker ${s.worker}${s.files ? ` · ${s.files} files` : ''}`];
    return [s.name ?? 'hook', s.worker === null ? 'the build' : `worker ${s.worker}`];
  };

  const boxOf = (source) => {
    let box = boxes.get(source.key);
    if (box) return box;
    const article = el('article', undefined, 'live-output');
    article.dataset.outputKey = source.key;
    const [name, where] = title(source);
    const head = el('h3');
    const state = el('span', 'running', 'status status-running');
    head.append(el('code', name), ` · ${where} · `, state);
    const pre = el('pre');
    pre.tabIndex = 0; // scrollable by keyboard
    article.append(head, pre);
    list.append(article);
    box = { article, pre, state, text: '', cut: false, dirty: false };
    boxes.set(source.key, box);
    root.hidden = false;
    return box;
  };

  const draw = () => {
    frame = 0;
    for (const box of boxes.values()) {
      if (!box.dirty) continue;
      box.dirty = false;
      // Follow the end unless someone scrolled up to read.
      const atEnd = box.pre.scrollTop + box.pre.clientHeight >= box.pre.scrollHeight - 8;
      const text = box.cut ? `…\n${box.text}` : box.text;
      if (window.sluiceAnsi) window.sluiceAnsi(box.pre, text);
      else box.pre.textContent = text;
      if (atEnd) box.pre.scrollTop = box.pre.scrollHeight;
    }
  };

  const source = new EventSource(root.dataset.liveOutput);
  source.addEventListener('output', (event) => {
    const o = JSON.parse(event.data);
    const box = boxOf(o.source);
    if (o.text) {
      box.text += o.text;
      if (box.text.length > KEEP) {
        // Keep whole lines where one starts soon enough.
        let from = box.text.length - KEEP;
        const line = box.text.indexOf('\n', from);
        if (line !== -1 && line - from < 1024) from = line + 1;
        box.text = box.text.slice(from);
        box.cut = true;
      }
      box.dirty = true;
    }
    if (o.end) {
      box.state.textContent = o.end.exit_code === null ? o.end.status : `${o.end.status} (exit code ${o.end.exit_code})`;
      box.state.className = `status status-${o.end.status}`;
      ended.push(box);
      while (ended.length > ENDED_KEPT) {
        const old = ended.shift();
        old.article.remove();
        for (const [key, b] of boxes) if (b === old) boxes.delete(key);
      }
    }
    if (!frame) frame = requestAnimationFrame(draw);
  });
  // The build is over: nothing more will come (without this, EventSource would reconnect).
  source.addEventListener('done', () => source.close());
})();
