// The build page, live: the server sends the build as it changes (GET /builds/:id/live,
// server-sent events) and this updates the page in place. Text only (textContent), never HTML.
(() => {
  const root = document.querySelector('[data-live]');
  if (!root || !('EventSource' in window)) return;
  const $ = (selector) => root.querySelector(selector);
  const cell = (label, text, className) => {
    const td = document.createElement('td');
    td.dataset.label = label;
    if (className) td.className = className;
    td.textContent = text;
    return td;
  };
  const source = new EventSource(root.dataset.live);
  source.addEventListener('build', (event) => {
    const b = JSON.parse(event.data);
    const status = $('[data-status]');
    status.textContent = b.status;
    status.className = `status status-${b.status}`;
    $('[data-commit]').textContent = b.commit;
    const reason = $('[data-reason]');
    reason.textContent = b.reason ?? '';
    reason.hidden = !b.reason;
    $('[data-stop]').hidden = !b.canStop;
    $('[data-rebuild]').hidden = !b.canRebuild;
    $('[data-counts]').textContent = b.countsText;
    $('[data-tests]').replaceChildren(
      ...b.tests.map((t) => {
        const tr = document.createElement('tr');
        tr.dataset.file = t.path;
        const file = cell('File', '');
        const code = document.createElement('code');
        code.textContent = t.path;
        file.append(code);
        const state = cell('Status', '');
        const span = document.createElement('span');
        span.className = `status status-${t.status}`;
        span.textContent = t.status;
        state.append(span);
        tr.append(file, state, cell('Duration', t.duration), cell('Runner', t.runner, 'muted'));
        return tr;
      }),
    );
    $('[data-timeline]').replaceChildren(
      ...b.timeline.map((step) => {
        const li = document.createElement('li');
        const key = document.createElement('strong');
        key.textContent = step.key;
        const after = document.createElement('span');
        after.className = 'muted';
        after.textContent = `+${step.after}`;
        li.append(key, ' ', after);
        return li;
      }),
    );
    document.title = `Build #${b.session} (${b.status}) · Sluice`;
    if (b.ended) source.close();
  });
})();
