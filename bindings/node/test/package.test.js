'use strict';
// What the npm package ships: the binding, its typings (index.d.ts and the
// generated abi.d.ts it imports), README, LICENSE, and the repository's
// docs/PROTOCOL.md and docs/ABI.md, copied in at pack time (prepack:
// scripts/pack-docs.js). Packs a copy of the package inside a temporary
// repository layout with `npm pack --dry-run`. No broker.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8'));

test('package.json ships the typings index.d.ts imports, and the two docs', () => {
  for (const f of ['lib/', 'index.d.ts', 'abi.d.ts', 'testing.d.ts', 'README.md', 'LICENSE', 'docs/PROTOCOL.md', 'docs/ABI.md']) {
    assert.ok(manifest.files.includes(f), `package.json "files" lacks ${f}`);
  }
  const dts = fs.readFileSync(path.join(pkg, 'index.d.ts'), 'utf8');
  for (const m of dts.matchAll(/from '\.\/([^']+)'/g)) {
    assert.ok(manifest.files.includes(`${m[1]}.d.ts`), `index.d.ts imports ./${m[1]}, which the package does not ship`);
  }
  assert.equal(manifest.scripts.prepack, 'node scripts/pack-docs.js');
  // require('krabka-coord') and require('krabka-coord/testing'), each with its typings, shipped
  assert.deepEqual(manifest.exports['.'], { types: './index.d.ts', default: './lib/index.js' });
  assert.deepEqual(manifest.exports['./testing'], { types: './testing.d.ts', default: './lib/testing.js' });
  for (const f of [manifest.exports['.'].default, manifest.exports['./testing'].default]) assert.ok(fs.existsSync(path.join(pkg, f)), f);
  assert.ok(fs.existsSync(path.resolve(pkg, '..', '..', 'docs', 'ABI.md')), "the repository's docs/ABI.md");
});

// A temporary repository: docs/ with the given files, bindings/node with
// this package's files. Returns the package folder.
function fakeRepository(docs) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-pack-'));
  fs.mkdirSync(path.join(root, 'docs'));
  for (const [name, text] of Object.entries(docs)) fs.writeFileSync(path.join(root, 'docs', name), text);
  const dest = path.join(root, 'bindings', 'node');
  fs.mkdirSync(dest, { recursive: true });
  for (const f of ['package.json', 'scripts', ...manifest.files.filter((x) => !x.startsWith('docs/'))]) {
    fs.cpSync(path.join(pkg, f), path.join(dest, f), { recursive: true });
  }
  return { root, dest };
}

function packList(dir) {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr, out: r.stdout };
}

test('npm pack carries docs/PROTOCOL.md and docs/ABI.md copied from the repository', { timeout: 120_000 }, () => {
  const { root, dest } = fakeRepository({ 'PROTOCOL.md': '# protocol marker\n', 'ABI.md': '# abi marker, longer\n' });
  try {
    const r = packList(dest);
    assert.equal(r.status, 0, r.stderr);
    const json = JSON.parse(r.out.slice(r.out.indexOf('[')));
    const files = Object.fromEntries(json[0].files.map((f) => [f.path, f.size]));
    assert.equal(files['docs/PROTOCOL.md'], '# protocol marker\n'.length);
    assert.equal(files['docs/ABI.md'], '# abi marker, longer\n'.length);
    for (const f of ['index.d.ts', 'abi.d.ts', 'testing.d.ts', 'lib/index.js', 'lib/abi.js', 'lib/calls.js', 'lib/testing.js', 'lib/testing_abi.js', 'LICENSE', 'README.md']) assert.ok(files[f] > 0, `the package lacks ${f}`);
    assert.ok(!Object.keys(files).some((f) => f.startsWith('test/') || f.startsWith('bench/')), 'no tests or benchmarks in the package');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('npm pack fails naming the doc the repository lacks', { timeout: 120_000 }, () => {
  const { root, dest } = fakeRepository({ 'ABI.md': '# abi\n' });
  try {
    const r = packList(dest);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /pack-docs: .*docs\/PROTOCOL\.md not found/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
