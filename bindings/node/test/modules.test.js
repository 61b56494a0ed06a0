'use strict';
// The module layout of lib/: every module loads alone in a fresh process
// (it requires what it needs itself: no module waits for another to inject
// a function into it), the require graph between them has no cycle, and no
// module exports an injection setter (set<Something>) for another to call.
// No broker needed.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const lib = path.resolve(__dirname, '..', 'lib');
const modules = fs.readdirSync(lib).filter((f) => f.endsWith('.js')).sort();

// The lib-local requires of a module's source: require('./x') anywhere in it.
function localRequires(file) {
  const src = fs.readFileSync(path.join(lib, file), 'utf8');
  const out = new Set();
  for (const m of src.matchAll(/require\(\s*(['"])(\.\/[^'"]+)\1\s*\)/g)) {
    let dep = m[2].slice(2);
    if (!dep.endsWith('.js')) dep += '.js';
    out.add(dep);
  }
  return [...out];
}

test('lib/ holds the modules of the layout', () => {
  for (const m of ['abi.js', 'native.js', 'errors.js', 'args.js', 'token.js', 'values.js', 'calls.js', 'leadership.js', 'watch.js', 'client.js', 'pure.js', 'headers.js', 'index.js']) {
    assert.ok(modules.includes(m), `lib/${m} is missing`);
  }
  assert.ok(!modules.includes('events.js'), 'lib/events.js (the reader injection) is gone');
});

for (const file of modules) {
  test(`lib/${file} loads alone in a fresh process`, () => {
    const script = `
      const m = require(${JSON.stringify(path.join(lib, file))});
      const keys = Object.keys(m);
      if (keys.length === 0) throw new Error('no exports');
      for (const k of keys) if (m[k] === undefined) throw new Error('export ' + k + ' is undefined');
      console.log(keys.join(','));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: process.env });
    assert.equal(r.status, 0, `require('lib/${file}') alone failed:\n${r.stderr}`);
    assert.ok(r.stdout.trim().length > 0);
  });
}

// A cycle of graph (module -> its requires) as a list of modules, or null.
function findCycle(graph) {
  const state = {}; // undefined: new, 1: on the path, 2: done
  const walk = (m, trail) => {
    if (state[m] === 2) return null;
    if (state[m] === 1) return [...trail.slice(trail.indexOf(m)), m];
    state[m] = 1;
    for (const d of graph[m] || []) {
      const c = walk(d, [...trail, m]);
      if (c) return c;
    }
    state[m] = 2;
    return null;
  };
  for (const m of Object.keys(graph)) {
    const c = walk(m, []);
    if (c) return c;
  }
  return null;
}

test('the require graph of lib/ has no cycle', () => {
  const graph = Object.fromEntries(modules.map((m) => [m, localRequires(m)]));
  for (const [m, deps] of Object.entries(graph)) {
    for (const d of deps) assert.ok(graph[d], `lib/${m} requires ./${d}, which is not in lib/`);
  }
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `require cycle: ${cycle && cycle.join(' -> ')}`);
  // The check finds a cycle where there is one.
  assert.deepEqual(findCycle({ 'a.js': ['b.js'], 'b.js': ['c.js'], 'c.js': ['b.js'] }), ['b.js', 'c.js', 'b.js']);
});

test('no module of lib/ exports an injection setter', () => {
  for (const file of modules) {
    const m = require(path.join(lib, file));
    const setters = Object.keys(m).filter((k) => /^set[A-Z]/.test(k) && typeof m[k] === 'function');
    assert.deepEqual(setters, [], `lib/${file} exports ${setters.join(', ')}`);
  }
});
