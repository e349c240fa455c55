#!/usr/bin/env node
// Fails when files import each other in a circle, within a workspace's src: a cycle means two
// files that cannot change apart (docs/architecture.md, Layering). Every relative import counts,
// `import type` too: a type shared both ways belongs in a file of its own (a ports file).
// Usage: node scripts/check-cycles.mjs [folder ...] (defaults to every workspace's src).
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const roots = process.argv.slice(2);
const folders =
  roots.length > 0
    ? roots
    : ['apps/server/src', 'apps/agent/src', 'apps/web/src', 'packages/ipa/src', 'packages/contracts/src'];

const isSource = (file) => /\.tsx?$/.test(file) && !/\.d\.ts$/.test(file);

function* filesUnder(folder) {
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'dist')
      yield* filesUnder(full);
    else if (entry.isFile() && isSource(full)) yield full;
  }
}

/** The file a relative specifier names: `./x.js` is `x.ts` or `x.tsx`, `./x` may be `x/index.ts`. */
function resolve(from, specifier) {
  const base = path.resolve(path.dirname(from), specifier);
  const stem = base.replace(/\.(m?js|jsx)$/, '');
  for (const candidate of [
    base,
    `${stem}.ts`,
    `${stem}.tsx`,
    path.join(base, 'index.ts'),
    path.join(base, 'index.tsx'),
  ])
    if (isSource(candidate) && fs.existsSync(candidate)) return candidate;
  return undefined;
}

function importsOf(file) {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(file, name))
    .filter((found) => found !== undefined);
}

/** Strongly connected components of more than one file (or a file importing itself): Tarjan's. */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const graph = new Map();
for (const folder of folders)
  for (const file of filesUnder(path.resolve(folder))) graph.set(file, importsOf(file));

const found = cycles(graph);
for (const component of found) {
  const shown = component.map((file) => path.relative(process.cwd(), file));
  console.error(`These files import each other in a circle:\n  ${shown.join('\n  ')}`);
}
if (found.length > 0) {
  console.error(`${found.length} import cycle(s): move what both sides need into a file of its own.`);
  process.exit(1);
}
console.log(`No import cycles among ${graph.size} files.`);
