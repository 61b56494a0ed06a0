'use strict';
// npm's prepack step: copies the repository's docs/PROTOCOL.md (the
// coordination protocol) and docs/ABI.md (the C ABI and how it grows) into
// this package's docs/, the files package.json ships. They live once, in
// the repository's docs/ (two levels up); the copies are not committed
// (bindings/node/.gitignore). packaging/dist.sh takes the same two files
// from the repository's docs/ when it stages the release package.
//
//   node scripts/pack-docs.js [docs-dir]   (default: ../../docs)

const fs = require('node:fs');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');
const from = path.resolve(process.argv[2] || path.join(pkg, '..', '..', 'docs'));
const files = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).files.filter((f) => f.startsWith('docs/'));
const missing = files.filter((f) => !fs.existsSync(path.join(from, path.basename(f))));
if (missing.length > 0) {
  process.stderr.write(`pack-docs: ${missing.map((f) => path.join(from, path.basename(f))).join(', ')} not found: the package ships ${files.join(' and ')} from the repository's docs/\n`);
  process.exit(1);
}
fs.mkdirSync(path.join(pkg, 'docs'), { recursive: true });
for (const f of files) fs.copyFileSync(path.join(from, path.basename(f)), path.join(pkg, f));
