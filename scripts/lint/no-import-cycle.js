// An ESLint rule of our own: a file that imports itself through other files fails `npm run lint`.
// eslint-plugin-import-x's no-cycle would do it, but is not a dependency; this one reads the
// relative imports of the TypeScript sources it walks (docs/architecture.md, Layout).
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** How a relative specifier names a file: as written, `.js` for its `.ts`, or without an extension. */
const SUFFIXES = ['', '.ts', '.tsx', '/index.ts', '/index.tsx'];

const isSource = (file) => /\.tsx?$/.test(file) && !file.endsWith('.d.ts');

/** The file's stat, or undefined when there is none (a missing file, a path through a file). */
function statOf(file) {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), specifier);
  const bases = /\.jsx?$/.test(base) ? [base.replace(/\.js(x?)$/, '.ts$1'), base] : [base];
  for (const b of bases)
    for (const suffix of SUFFIXES) {
      const file = b + suffix;
      if (isSource(file) && statOf(file)?.isFile()) return file;
    }
  return null;
}

/**
 * The files a source depends on: static and dynamic imports and re-exports. Type-only ones count
 * too: two files whose types name each other still change together, which is what a cycle costs.
 */
function runtimeSpecifiers(file, text) {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const found = [];
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier) found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Each file's imports as resolved paths, read again when the file changes (editors, --cache). */
const known = new Map();

function importsOf(file) {
  const mtimeMs = statOf(file)?.mtimeMs;
  if (mtimeMs === undefined) return [];
  const cached = known.get(file);
  if (cached?.mtimeMs === mtimeMs) return cached.imports;
  const imports = runtimeSpecifiers(file, fs.readFileSync(file, 'utf8'))
    .map((specifier) => resolve(file, specifier))
    .filter((resolved) => resolved !== null);
  known.set(file, { mtimeMs, imports });
  return imports;
}

/** A chain of imports from `start` back to `target`, or null when there is none. */
function pathBack(start, target) {
  const seen = new Set();
  const walk = (file) => {
    if (file === target) return [file];
    if (seen.has(file)) return null;
    seen.add(file);
    for (const next of importsOf(file)) {
      const rest = walk(next);
      if (rest) return [file, ...rest];
    }
    return null;
  };
  return walk(start);
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Refuses an import that leads back to the importing file.' },
    schema: [],
    messages: { cycle: 'Import cycle: {{chain}}. Move what both need into a module neither imports.' },
  },
  create(context) {
    const self = path.resolve(context.filename);
    const check = (source) => {
      if (typeof source?.value !== 'string') return;
      const target = resolve(self, source.value);
      if (!target) return;
      const chain = pathBack(target, self);
      if (!chain) return;
      const names = [self, ...chain].map((file) => path.relative(context.cwd, file));
      context.report({ node: source, messageId: 'cycle', data: { chain: names.join(' -> ') } });
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};
