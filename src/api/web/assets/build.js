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
  const statusSpan = (status) => {
    const span = document.createElement('span');
    span.className = `status status-${status}`;
    span.textContent = status;
    return span;
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
    const workflow = $('[data-workflow]');
    workflow.hidden = !b.workflowUrl;
    if (b.workflowUrl) workflow.href = b.workflowUrl;
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
        state.append(statusSpan(t.status));
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
    $('[data-parts-section]').hidden = b.parts.length === 0;
    $('[data-parts]').replaceChildren(
      ...b.parts.map((p) => {
        const li = document.createElement('li');
        const link = document.createElement('a');
        link.href = `/builds/${p.session}`;
        link.textContent = `#${p.session}`;
        li.append(link, ` ${p.profile} `, statusSpan(p.status));
        return li;
      }),
    );
    $('[data-failures-section]').hidden = b.failures.length === 0;
    $('[data-failures]').replaceChildren(
      ...b.failures.map((f) => {
        const article = document.createElement('article');
        article.className = 'failure';
        const title = document.createElement('h3');
        const code = document.createElement('code');
        code.textContent = f.path;
        title.append(code, ' ', statusSpan(f.status));
        const pre = document.createElement('pre');
        pre.textContent = f.output;
        article.append(title, pre);
        return article;
      }),
    );
    document.title = `Build #${b.session} (${b.status}) · Sluice`;
    if (b.ended) source.close();
  });
})();
