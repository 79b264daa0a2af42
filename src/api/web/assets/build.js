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
  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  };
  const code = (text, className) => el('code', text, className);
  // The timeline's picture, drawn from the tree the server made (api/web/timeline.ts): its tags
  // and attributes only, text as text.
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const SVG_TAGS = new Set(['svg', 'g', 'rect', 'line', 'text', 'tspan', 'title', 'desc', 'defs', 'path', 'use']);
  const svg = (node) => {
    if (typeof node === 'string') return document.createTextNode(node);
    const [tag, attrs, ...children] = node;
    if (!SVG_TAGS.has(tag)) return document.createTextNode('');
    const out = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (!/^[a-z][a-z0-9-]*$/i.test(name) || /^on/i.test(name) || (name === 'href' && !String(value).startsWith('#'))) continue;
      out.setAttribute(name, String(value));
    }
    out.append(...children.map(svg));
    return out;
  };
  // Sections redrawn only when what they show changed; an output someone opened stays open.
  const drawn = {};
  const redraw = (name, items, draw) => {
    const text = JSON.stringify(items);
    if (drawn[name] === text) return;
    drawn[name] = text;
    $(`[data-${name}-section]`).hidden = items.length === 0;
    draw($(`[data-${name}]`), items);
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
    // Absent for a viewer: only maintainers stop and rebuild.
    const stop = $('[data-stop]');
    const rebuild = $('[data-rebuild]');
    const resolving = $('[data-rebuild-resolving]');
    if (stop) stop.hidden = !b.canStop;
    if (rebuild) rebuild.hidden = !b.canRebuild;
    if (resolving) resolving.hidden = !b.canRebuildResolving;
    const full = $('[data-rebuild-full]');
    if (full) full.hidden = !b.canRebuildFull;
    const selection = $('[data-selection]');
    selection.textContent = b.selection ?? '';
    selection.hidden = !b.selection;
    const first = $('[data-first]');
    first.textContent = b.firstFailures ?? '';
    first.hidden = !b.firstFailures;
    // The image is recorded when the build starts: a page opened before that learns it here.
    const image = $('[data-image]');
    image.hidden = !b.image;
    if (b.image) {
      const ref = $('[data-image-ref]');
      ref.textContent = b.image.reference;
      ref.title = b.image.full;
      const digest = $('[data-image-digest]');
      digest.textContent = b.image.short;
      digest.title = b.image.digest;
    }
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
        if (t.flaky) state.append(' ', el('span', 'flaky', 'badge-flaky'));
        if (t.why) {
          const why = el('span', t.why, 'muted small');
          why.dataset.why = '';
          state.append(' ', why);
        }
        tr.append(file, state, cell('Duration', t.duration), cell('Runner', t.runner, 'muted'), cell('Batch', t.batch), cell('Runs', t.runs));
        return tr;
      }),
    );
    const picture = JSON.stringify(b.timeline.picture);
    if (drawn.picture !== picture) {
      drawn.picture = picture;
      $('[data-timeline-picture]').replaceChildren(svg(b.timeline.picture));
    }
    $('[data-timeline]').replaceChildren(
      ...b.timeline.keys.map((k) => {
        const tr = el('tr');
        const key = cell('Timing key', '');
        key.append(code(k.key));
        tr.append(key, cell('Step', k.step), cell('At', k.at), cell('Took', k.took));
        return tr;
      }),
    );
    redraw('lanes', b.timeline.lanes, (body, lanes) => {
      body.replaceChildren(
        ...lanes.map((l) => {
          const tr = el('tr');
          tr.append(
            cell('Worker', l.worker),
            cell('Runner', l.runner, 'muted'),
            cell('Files', String(l.files)),
            cell('Batches', String(l.batches)),
            cell('Failed', String(l.failed)),
            cell('Flaky', String(l.flaky)),
            cell('Tests from', l.from),
            cell('To', l.to),
            cell('Took', l.took),
            cell('Idle at the end', l.idle),
          );
          return tr;
        }),
      );
    });
    redraw('flaky', b.flaky, (list, flaky) => {
      list.replaceChildren(
        ...flaky.map((f) => {
          const li = el('li');
          li.append(code(f.path), `: ${f.runs}; ${f.history}`);
          return li;
        }),
      );
    });
    redraw('batches', b.batches, (body, batches) => {
      body.replaceChildren(
        ...batches.map((x) => {
          const tr = el('tr');
          tr.dataset.batch = String(x.id);
          const state = cell('Status', '');
          state.append(statusSpan(x.status));
          if (x.exitCode) state.append(' ', el('span', `exit code ${x.exitCode}`, 'muted'));
          tr.append(cell('Batch', `#${x.id}`), cell('Worker', String(x.worker)), cell('Files', String(x.files)), state, cell('Duration', x.duration), cell('What became of it', x.note));
          return tr;
        }),
      );
    });
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
        if (window.sluiceAnsi) window.sluiceAnsi(pre, f.output);
        else pre.textContent = f.output;
        article.append(title, pre);
        return article;
      }),
    );
    redraw('hooks', b.hooks, (list, hooks) => {
      const open = new Set([...list.querySelectorAll('[data-hook]')].filter((li) => li.querySelector('details[open]')).map((li) => li.dataset.hook));
      list.replaceChildren(
        ...hooks.map((h) => {
          const li = el('li', undefined, 'hook');
          li.dataset.hook = h.key;
          const head = el('div');
          const name = el('strong');
          name.append(code(h.name));
          head.append(name, ` · ${h.where} · `, statusSpan(h.status));
          if (h.exitCode) head.append(` · exit code ${h.exitCode}`);
          head.append(' · ', el('span', h.duration, 'muted'));
          const command = el('div', undefined, 'muted');
          command.append(code(h.command, 'wrap'));
          li.append(head, command);
          if (h.detail) li.append(el('div', h.detail, 'muted'));
          if (h.output) {
            const details = el('details');
            details.open = open.has(h.key);
            const pre = el('pre');
            if (window.sluiceAnsi) window.sluiceAnsi(pre, h.output);
            else pre.textContent = h.output;
            details.append(el('summary', h.outputLabel), pre);
            li.append(details);
          }
          return li;
        }),
      );
    });
    redraw('workers', b.workers, (list, workers) => {
      list.replaceChildren(
        ...workers.map((w) => {
          const li = el('li', `worker ${w.worker}`);
          if (w.runner) li.append(' ', el('span', `on ${w.runner}`, 'muted'));
          li.append(': ', el('span', w.state, `status status-${w.stateClass}`));
          if (w.failure) li.append(` ${w.failure}`);
          if (w.notes.length > 0) {
            const notes = el('ul');
            notes.append(...w.notes.map((n) => el('li', n)));
            li.append(notes);
          }
          return li;
        }),
      );
    });
    redraw('artifacts', b.artifacts, (body, artifacts) => {
      body.replaceChildren(
        ...artifacts.map((a) => {
          const tr = document.createElement('tr');
          const file = cell('File', '');
          const link = el('a');
          link.href = a.href;
          link.download = '';
          link.rel = 'noopener noreferrer';
          link.append(code(a.path));
          file.append(link);
          tr.append(file, cell('Worker', String(a.worker)), cell('Size', a.size));
          return tr;
        }),
      );
    });
    document.title = `Build #${b.session} (${b.status}) · Sluice`;
    if (b.settled) source.close();
  });
})();
