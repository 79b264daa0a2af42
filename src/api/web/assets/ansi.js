// Colours in the build page's output boxes (issue 37), as the server renders them (api/web/ansi.ts):
// Anser (assets/anser.js, the same library) reads the escapes; each run of text becomes a <span>
// with the classes of its colour and decorations, its text set as textContent, so nothing a build
// printed is ever parsed as HTML. Without Anser, the text as it is.
window.sluiceAnsi = (pre, text) => {
  if (!window.Anser || !text.includes('\u001b')) {
    pre.textContent = text;
    return;
  }
  const parts = window.Anser.ansiToJson(text, { use_classes: true, remove_empty: true });
  pre.replaceChildren(
    ...parts.map((p) => {
      const classes = [
        p.fg && p.fg !== 'ansi-truecolor' ? `${p.fg}-fg` : '',
        p.bg && p.bg !== 'ansi-truecolor' ? `${p.bg}-bg` : '',
        ...p.decorations.map((d) => `ansi-${d}`),
      ].filter(Boolean);
      if (classes.length === 0) return document.createTextNode(p.content);
      const span = document.createElement('span');
      span.className = classes.join(' ');
      span.textContent = p.content;
      return span;
    }),
  );
};
