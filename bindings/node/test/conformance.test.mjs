// Runs the conformance runner as users do (a child process) and asserts its
// summary: every vector the binding can express passes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const runner = fileURLToPath(new URL('./conformance.mjs', import.meta.url));

test('conformance vectors through the binding: 0 failed', () => {
  const r = spawnSync(process.execPath, [runner], { encoding: 'utf8' });
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  const lines = r.stdout.trim().split('\n');
  const summary = lines[lines.length - 1];
  const m = /^(\d+) passed, (\d+) failed$/.exec(summary);
  assert.ok(m, `last line is the summary, got ${JSON.stringify(summary)}`);
  assert.match(lines[lines.length - 2], /^not run: fold \(|^not run: .*fold/);
  assert.equal(Number(m[2]), 0, lines.filter((l) => l.startsWith('FAIL ')).join('\n'));
  assert.ok(Number(m[1]) >= 456, `expected at least 456 vectors to pass, got ${m[1]}`);
  assert.equal(r.status, 0);
});

test('conformance --json gives per-group counts that add up', () => {
  const r = spawnSync(process.execPath, [runner, '--json'], { encoding: 'utf8' });
  const json = JSON.parse(r.stdout.trim().split('\n').pop());
  let sum = 0;
  for (const g of Object.values(json.groups)) sum += g.passed + g.failed + g.not_run;
  assert.equal(sum, json.passed + json.failed + json.not_run);
  assert.equal(json.failed, 0);
  assert.equal(json.groups.codec.passed, 22);
});
