'use strict';
// The library's log reaches a Node host through the client's 'log' event
// only, never stderr, on a real broker ($KRABKA_BOOTSTRAP): the binding
// gives every client the event queue as its log sink before the client
// exists, so the library never falls back to its default logger (stderr in
// C and Go hosts). The line used is the warning about a coordination topic
// whose settings let it grow without bound (a topic created by ktopic:
// cleanup.policy=delete), logged by default (krabka.log.level warn).

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const repo = path.resolve(__dirname, '..', '..', '..');

function createTopic(topic) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-log-'));
  const bin = path.join(dir, 'ktopic');
  execFileSync(process.env.GO || 'go', ['build', '-o', bin, './tests/kafka/cmd/ktopic'], { cwd: repo, stdio: 'inherit' });
  execFileSync(bin, [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.rmSync(dir, { recursive: true, force: true });
}

test("the library's warnings come through the 'log' event and nothing is written to stderr", { timeout: 120_000 }, async () => {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run under `make test` or export the address of a running broker');
  const topic = `node-log-uncompacted-${process.pid}-${Date.now().toString(36)}`;
  createTopic(topic);
  // Two clients on that topic, default settings: `quiet` has no 'log'
  // listener, `heard` has one that prints the lines to stdout as JSON.
  const script = `
    const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const conf = (id) => ({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': id, 'krabka.topic': ${JSON.stringify(topic)} });
    const quiet = new Client(conf('log-quiet'));
    const heard = new Client(conf('log-heard'));
    let warned;
    const seen = new Promise((resolve) => (warned = resolve));
    heard.on('log', (l) => {
      process.stdout.write(JSON.stringify(l) + '\\n');
      if (l.message.includes('grow without bound')) warned();
    });
    (async () => {
      await Promise.all([quiet.describe('r', { timeoutMs: 30000 }), heard.describe('r', { timeoutMs: 30000 })]);
      const limit = setTimeout(() => { process.stdout.write('no warning within 30 s\\n'); process.exit(3); }, 30000);
      await seen;
      clearTimeout(limit);
      await new Promise((r) => setTimeout(r, 1000)); // quiet's check runs at the same time
      await Promise.all([quiet.close(), heard.close()]);
      process.stdout.write('done\\n');
    })().catch((e) => { process.stdout.write('failed ' + e.stack + '\\n'); process.exit(1); });
  `;
  const child = spawn(process.execPath, ['-e', script], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (err += b));
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `child exit code; stdout:\n${out}\nstderr:\n${err}`);
  assert.match(out, /\ndone\n$/);
  const lines = out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const warning = lines.find((l) => l.message.includes('grow without bound'));
  assert.ok(warning, `no topic-settings warning among ${out}`);
  assert.equal(warning.level, 'WARNING');
  assert.match(warning.message, /client=log-heard/);
  assert.match(warning.message, new RegExp(`topic=${topic}\\b`));
  assert.match(warning.message, /cleanup\.policy=delete \(want compact\)/);
  assert.equal(err, '', 'nothing may reach stderr');
});
