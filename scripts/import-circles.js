#!/usr/bin/env node
/**
 * Part of `npm run lint`: no import circles in src/, type-only imports included. A circle makes
 * the order modules load in matter (a value read before its module ran is undefined) and ties
 * layers that should stand alone: two modules that need each other's types are one module, or
 * share a third that both import.
 *
 * Usage: node scripts/import-circles.js [dir]   (default src/); exit 1 and each circle printed.
 */
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

/** Every .ts file under `dir`. */
function sources(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The files of `files` that `file` imports or re-exports (relative specifiers only: packages are not ours). */
function importsOf(file, files) {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  const out = new Set();
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), fileName);
    const hit = [`${base}.ts`, path.join(base, 'index.ts'), base.replace(/\.js$/, '.ts')].find((c) => files.has(c));
    if (hit) out.add(hit);
  }
  return out;
}

/** Each circle once, as a list of files from its first to the one that imports the first again. */
function findCircles(graph) {
  // Tarjan's strongly connected components: every component of more than one file (or a file
  // importing itself) holds at least one circle; one shortest circle through it is reported.
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const components = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || graph.get(v).has(v)) components.push(comp);
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return components.map((comp) => shortestCircle(graph, new Set(comp), comp.sort()[0]));
}

/** A shortest path from `start` back to itself inside `within` (breadth first). */
function shortestCircle(graph, within, start) {
  const prev = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v)) {
      if (!within.has(w)) continue;
      if (w === start) {
        const circle = [v];
        while (circle[0] !== start) circle.unshift(prev.get(circle[0]));
        return circle;
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

function main() {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'src'));
  const files = new Set(sources(root));
  const graph = new Map([...files].map((f) => [f, importsOf(f, files)]));
  const circles = findCircles(graph);
  for (const circle of circles) {
    const names = [...circle, circle[0]].map((f) => path.relative(process.cwd(), f));
    console.error(`import circle: ${names.join(' → ')}`);
  }
  if (circles.length > 0) {
    console.error(`${circles.length} import circle(s) in ${path.relative(process.cwd(), root) || root}: move what both sides need into a module of its own`);
    process.exit(1);
  }
}

main();
