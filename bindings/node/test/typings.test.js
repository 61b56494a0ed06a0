'use strict';
// index.d.ts stays in sync with usage: tsc --noEmit on test/types/usage.ts.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const fs = require('node:fs');

test('index.d.ts type-checks a usage sample (tsc --noEmit)', () => {
  const pkg = path.resolve(__dirname, '..');
  const tsc = path.join(pkg, 'node_modules', 'typescript', 'bin', 'tsc');
  // npm ci installs typescript (a devDependency): its absence fails the test.
  assert.ok(fs.existsSync(tsc), `${tsc} is missing: run npm ci in bindings/node (make node-deps)`);
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(pkg, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('index.d.ts names every export of the package', () => {
  const dts = fs.readFileSync(path.resolve(__dirname, '..', 'index.d.ts'), 'utf8');
  for (const name of Object.keys(require('..'))) {
    assert.match(dts, new RegExp(`export (declare )?(class|function|const|type|interface) ${name}\\b`), `index.d.ts lacks ${name}`);
  }
});

test('testing.d.ts names every export of krabka-coord/testing', () => {
  const dts = fs.readFileSync(path.resolve(__dirname, '..', 'testing.d.ts'), 'utf8');
  for (const name of Object.keys(require('../lib/testing'))) {
    assert.match(dts, new RegExp(`export (declare )?(class|function|const|type|interface) ${name}\\b`), `testing.d.ts lacks ${name}`);
  }
});
