/**
 * Colours and styles a test run printed (ANSI SGR escapes: jest's grey frames, mocha's red and
 * green), as the pages show them (issue 37): each run of text in a `<span>` with the classes of
 * its colour and decorations, the text escaped, every other escape dropped. Anser (a maintained
 * parser, the one the browser's live output uses too: assets/ansi.js) reads the escapes; the
 * colours are the pages' own, light and dark (views/layout.eta `.ansi-*`).
 */
import Anser from 'anser';
import { escapeHtml } from './pages';

/** HTML of `text` with its ANSI colours and styles as classes; nothing of it unescaped. */
export function ansiHtml(text: string): string {
  if (!text.includes('\u001b')) return escapeHtml(text);
  let html = '';
  for (const part of Anser.ansiToJson(text, { use_classes: true, remove_empty: true })) {
    const classes = [
      part.fg && part.fg !== 'ansi-truecolor' ? `${part.fg}-fg` : '',
      part.bg && part.bg !== 'ansi-truecolor' ? `${part.bg}-bg` : '',
      ...part.decorations.map((d) => `ansi-${d}`),
    ].filter(Boolean);
    const content = escapeHtml(part.content);
    html += classes.length === 0 ? content : `<span class="${classes.join(' ')}">${content}</span>`;
  }
  return html;
}
