'use strict';
// examples/node/controller.js as a child process on $KRABKA_BOOTSTRAP: it
// wins the role, dispatches guarded writes only inside its term, and
// resigns on SIGTERM (the role is free at once, long before its lease could
// run out); the command log read back (tests/kafka/cmd/kread) holds exactly
// the writes it reported, in order, under its term's producer.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { Client } = require('..');

const repo = path.resolve(__dirname, '..', '..', '..');
const example = path.join(repo, 'examples', 'node', 'controller.js');
const unique = (what) => `node-controller-${what}-${process.pid}-${Date.now().toString(36)}`;

function tools() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-controller-'));
  for (const t of ['ktopic', 'kread']) {
    execFileSync(process.env.GO || 'go', ['build', '-o', path.join(dir, t), `./tests/kafka/cmd/${t}`], { cwd: repo, stdio: 'inherit' });
  }
  return { ktopic: path.join(dir, 'ktopic'), kread: path.join(dir, 'kread') };
}

test('examples/node/controller.js wins, writes inside its term and resigns on SIGTERM', { timeout: 180_000 }, async () => {
  const bootstrap = process.env.KRABKA_BOOTSTRAP;
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run under `make test` or export the address of a running broker');
  const { ktopic, kread } = tools();
  const role = unique('role');
  const topic = unique('commands');
  execFileSync(ktopic, [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
  // The default 30 s lease: a free role right after the exit comes from the resign.
  const child = spawn(process.execPath, [example, bootstrap, role, 'node-1', topic], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env },
  });
  const out = [];
  let err = '';
  child.stderr.on('data', (b) => (err += b));
  const exited = new Promise((r) => child.on('exit', (code, sig) => r({ code, sig })));
  const observer = new Client({ 'bootstrap.servers': bootstrap, 'client.id': 'controller-observer' });
  let timer;
  try {
    const enough = new Promise((resolve, reject) => {
      readline.createInterface({ input: child.stdout }).on('line', (l) => {
        out.push(l);
        if (out.filter((x) => x.startsWith('written ')).length === 3) resolve();
      });
      exited.then(() => reject(new Error(`the controller exited early: ${out.join('\n')}\n${err}`)));
      timer = setTimeout(() => reject(new Error(`no 3 writes within 90 s: ${out.join('\n')}\n${err}`)), 90_000);
    });
    await enough;
    clearTimeout(timer);
    const s = await observer.describe(role, { timeoutMs: 30_000 });
    assert.equal(s.holder, 'node-1');
    child.kill('SIGTERM');
    const { code, sig } = await Promise.race([exited, new Promise((_, rej) => (timer = setTimeout(() => rej(new Error('the controller did not exit within 60 s of SIGTERM')), 60_000)))]);
    clearTimeout(timer);
    assert.equal(code, 0, `exit code ${code} ${sig}: ${err}`);
    const text = out.join('\n');
    assert.match(text, /^STARTED term 1 token \d+:\d+$/m);
    assert.match(text, /^STOPPED term 1 reason RESIGNED$/m, 'SIGTERM resigned the term');
    assert.ok(text.indexOf('STARTED term 1') < text.indexOf('written '), 'writes only after the start');
    assert.ok(text.lastIndexOf('written ') < text.indexOf('STOPPED term 1'), 'no write reported after the stop');
    const after = await observer.describe(role, { timeoutMs: 30_000 });
    assert.ok(after.lease === null || Number(after.lease.deadline) <= Date.now(), 'the resign expired the lease');
    assert.equal(after.roster.length, 0, 'the resign removed the registration');
    // The command log: every reported write, in order, one producer.
    const written = out.filter((l) => l.startsWith('written ')).map((l) => l.slice('written '.length));
    const records = execFileSync(kread, [bootstrap, topic], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(records.map((r) => `${r.partition}:${r.offset}`), written, 'the records are the writes reported');
    assert.deepEqual(records.map((r) => r.value), written.map((_, i) => `command ${i + 1}`));
    assert.ok(records.every((r) => r.key === 'node-1' && r.producer_id === records[0].producer_id && r.producer_epoch === records[0].producer_epoch));
    const token = text.match(/^STARTED term 1 token (\d+):(\d+)$/m);
    assert.equal(`${records[0].producer_id}:${records[0].producer_epoch}`, `${token[1]}:${token[2]}`, "the records carry the term's token");
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
    await observer.close();
  }
});
