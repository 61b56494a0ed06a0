'use strict';
// The completion path on a real broker ($KRABKA_BOOTSTRAP): every blocking
// call is an *_async call on the event queue (lib/calls.js).
// - An aborted acquire that wins afterwards holds no lease: another member
//   acquires the role long before the aborted side's lease could run out.
// - 1000 calls (some aborted) leave no call, event or C object behind.
// - A process exits by itself after its last call, without closing its client.
// - With UV_THREADPOOL_SIZE=1 and that one pool thread blocked, 64
//   concurrent produce() calls (and acquire, describe, renew, resign)
//   complete: nothing of them runs on the libuv pool.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, KrabkaError, ErrorCode, pendingCalls } = require('..');
const runner = require('../lib/calls');
const { native } = require('../lib/native');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const repo = path.resolve(__dirname, '..', '..', '..');
const pkg = path.resolve(__dirname, '..');
const unique = (what) => `node-queue-${what}-${process.pid}-${Date.now().toString(36)}`;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
// Held for 5 minutes unless resigned: a takeover within the test's limit
// can only follow a resign.
const LONG = { ...SHORT, 'krabka.lease.ms': 300000, 'krabka.renew.interval.ms': 100000 };

function requireBroker() {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run under `make test` or export the address of a running broker');
}
const client = (id, extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, ...SHORT, ...extra });

let ktopic = null;
function createTopic(topic) {
  if (!ktopic) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-queue-'));
    ktopic = path.join(dir, 'ktopic');
    execFileSync(process.env.GO || 'go', ['build', '-o', ktopic, './tests/kafka/cmd/ktopic'], { cwd: repo, stdio: 'inherit' });
  }
  execFileSync(ktopic, [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

// Runs a script in a child process; resolves to { code, signal, out, err }.
// A child still running after limitMs is killed (signal SIGKILL): the
// tests assert it was not.
function runChild(script, env = {}, limitMs = 120_000) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', script], { cwd: pkg, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (b) => (out += b));
    p.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => p.kill('SIGKILL'), limitMs);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

test('an aborted acquire that wins afterwards holds no lease: another member acquires', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('abort-win');
  // The holder's lease outlasts the test too: the role changes hands only
  // by its resign, however slow the machine.
  const holder = client('queue-holder', LONG);
  const aborted = client('queue-aborted', LONG);
  const next = client('queue-next');
  try {
    const h = await holder.acquire(role, 'holder', { timeoutMs: 60_000 });
    const disposedBefore = runner.stats().disposed;
    const ac = new AbortController();
    const p = aborted.acquire(role, 'aborted', { signal: ac.signal });
    // It registers behind the holder: then it is the first standby.
    for (;;) {
      const st = await holder.describe(role, { timeoutMs: 30_000 });
      if (st.roster.some((e) => e.member === 'aborted')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    ac.abort();
    await assert.rejects(p, { name: 'AbortError' });
    // 'other' registers after it, so 'aborted' takes the role first when
    // the holder resigns; the binding then resigns it (its lease would
    // last 5 minutes) and 'other' wins.
    assert.equal((await next.tryAcquire(role, 'other', { timeoutMs: 30_000 })).leadership, null);
    const won = next.acquire(role, 'other', { timeoutMs: 90_000 });
    await h.resign({ timeoutMs: 30_000 });
    const l = await won;
    assert.equal(l.state, 'ACTIVE');
    const st = await next.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.holder, 'other');
    assert.ok(st.token.equals(l.token));
    assert.ok(!st.roster.some((e) => e.member === 'aborted'), 'the aborted side resigned (its registration is gone)');
    assert.equal(runner.stats().disposed, disposedBefore + 1, 'one leadership disposed of');
    await l.resign({ timeoutMs: 30_000 });
  } finally {
    await Promise.all([holder.close(), aborted.close(), next.close()]);
  }
});

test('1000 calls leave no call, event or C object behind', { timeout: 300_000 }, async () => {
  requireBroker();
  const role = unique('thousand');
  const topic = unique('thousand');
  createTopic(topic);
  // A lease that cannot run out during the calls (the standby's
  // tryAcquire must never win, however slow the machine).
  const c = client('queue-thousand', { ...LONG, 'request.timeout.ms': 30000 });
  const other = client('queue-thousand-other');
  try {
    const l = await c.acquire(role, 'm', { timeoutMs: 60_000 });
    const s0 = runner.stats();
    const kinds = ['produce', 'produce', 'produce', 'produce', 'produceBatch', 'renew', 'describe', 'tryAcquire', 'aborted-describe', 'aborted-produce'];
    const one = (i) => {
      switch (kinds[i % kinds.length]) {
        case 'produce':
          return l.produce(topic, `command ${i}`, { partition: 0 }).then((r) => assert.equal(typeof r.offset, 'bigint'));
        case 'produceBatch':
          return l.produceBatch([{ topic, value: `a${i}`, partition: 0 }, { topic, value: `b${i}`, partition: 0, headers: { n: String(i) } }]).then((r) => assert.equal(r.length, 2));
        case 'renew':
          return l.renew();
        case 'describe':
          return c.describe(role).then((s) => assert.equal(s.holder, 'm'));
        case 'tryAcquire':
          return other.tryAcquire(role, 'other').then((r) => assert.equal(r.leadership, null));
        case 'aborted-describe': {
          const ac = new AbortController();
          const p = c.describe(role, { signal: ac.signal });
          ac.abort();
          return assert.rejects(p, { name: 'AbortError' });
        }
        case 'aborted-produce': {
          const ac = new AbortController();
          const p = l.produce(topic, `aborted ${i}`, { partition: 0, signal: ac.signal });
          ac.abort();
          return assert.rejects(p, { name: 'AbortError' });
        }
      }
      throw new Error('unreachable');
    };
    const N = 1000;
    const batch = 50;
    for (let i = 0; i < N; i += batch) await Promise.all(Array.from({ length: batch }, (_, j) => one(i + j)));
    // The aborted calls' events come after their Promises rejected: wait
    // for the runner to have seen every call complete.
    while (runner.stats().inFlight > 0) await new Promise((r) => setTimeout(r, 20));
    const s1 = runner.stats();
    assert.equal(s1.submitted - s0.submitted, N, 'every call went through the event queue');
    assert.equal(s1.completed - s0.completed, N, 'and completed there');
    assert.equal(s1.inFlight, 0);
    assert.equal(pendingCalls(), 0);
    assert.equal(s1.pending, s1.endWaiters, 'no call but `ended` waiters pending');
    assert.equal(s1.keepAlive, 0, 'nothing holds the event loop');
    assert.equal(s1.polled, s1.destroyed, 'every event polled was destroyed');
    assert.ok(s1.polled - s0.polled >= N);
    assert.equal(s1.taken.status - s0.taken.status, N / 10, 'one describe result per describe that was waited for');
    assert.equal(s1.taken.status, s1.freed.status, 'every describe result released');
    assert.equal(s1.taken.watchEvent, s1.freed.watchEvent);
    assert.equal(s1.taken.leadership - s0.taken.leadership, 0, 'no leadership won by the 1000 calls');
    assert.equal(s1.pool, 0);
    // Nothing waits in the library's queue.
    const out = [null];
    assert.equal(native().fns.krabka_queue_poll(runner.queueHandle(), out), 0);
    assert.equal(out[0], null);
    // The library's own view: one leader, its writes counted.
    const stats = c.stats();
    assert.equal(stats.leaders, 1);
    assert.ok(stats.roles[role].guarded_writes >= 500, `guarded_writes ${stats.roles[role].guarded_writes}`);
    await l.resign();
    await l.close();
  } finally {
    await Promise.all([c.close(), other.close()]);
  }
});

test('a process exits by itself after its last call, its client left open', { timeout: 150_000 }, async () => {
  requireBroker();
  const role = unique('exit');
  const topic = unique('exit');
  createTopic(topic);
  const script = `
    const { Client } = require('.');
    const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': 'queue-exit' });
    (async () => {
      const l = await c.acquire(${JSON.stringify(role)}, 'm', { timeoutMs: 60000 });
      await l.produce(${JSON.stringify(topic)}, 'x', { partition: 0 });
      await l.renew();
      const st = await c.describe(${JSON.stringify(role)});
      const w = await c.watch(${JSON.stringify(role)});
      const first = await w.next();
      await l.resign();
      console.log('last call done', st.holder, first.value.kind, (await l.ended).state);
    })().catch((e) => { console.log('failed', e.stack); process.exitCode = 1; });
  `;
  const r = await runChild(script);
  assert.equal(r.signal, null, `the child did not exit by itself; it printed ${JSON.stringify(r.out)}; stderr:\n${r.err}`);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.trim(), 'last call done m HOLDER_CHANGED RESIGNED');
});

test('64 concurrent produce() calls complete with UV_THREADPOOL_SIZE=1 and that pool thread blocked', { timeout: 150_000 }, async () => {
  requireBroker();
  const role = unique('pool');
  const topic = unique('pool');
  createTopic(topic);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-pool-'));
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const script = `
    const fs = require('node:fs');
    const { Client, pendingCalls } = require('.');
    const fifo = ${JSON.stringify(fifo)};
    // Opening a FIFO for reading waits for a writer: this blocks the only
    // libuv pool thread until the writer opens it below.
    let released = false;
    fs.open(fifo, 'r', (err, fd) => { released = true; if (!err) fs.closeSync(fd); });
    // A probe that needs the pool: it cannot run while the thread is blocked.
    let probed = false;
    fs.stat('.', () => { probed = true; });
    (async () => {
      const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': 'queue-pool', 'request.timeout.ms': 60000 });
      const l = await c.acquire(${JSON.stringify(role)}, 'm', { timeoutMs: 60000 });
      const writes = Array.from({ length: 64 }, (_, i) => l.produce(${JSON.stringify(topic)}, 'command ' + i, { partition: 0 }));
      const inFlight = pendingCalls();
      const results = await Promise.all(writes);
      const offsets = new Set(results.map((r) => String(r.offset)));
      await l.renew();
      const st = await c.describe(${JSON.stringify(role)});
      await l.resign();
      console.log('in flight ' + inFlight);
      console.log('written ' + results.length + ' distinct ' + offsets.size);
      console.log('holder ' + st.holder + ' state ' + l.state);
      console.log('pool blocked ' + (!released && !probed));
      fs.closeSync(fs.openSync(fifo, 'w')); // releases the pool thread
      await l.close();
      await c.close();
      console.log('closed ' + released + ' ' + probed);
    })().catch((e) => { console.log('failed', e.stack); process.exitCode = 1; });
  `;
  try {
    const r = await runChild(script, { UV_THREADPOOL_SIZE: '1' });
    assert.equal(r.signal, null, `the child was killed; it printed ${JSON.stringify(r.out)}; stderr:\n${r.err}`);
    assert.equal(r.code, 0, `${r.out}\n${r.err}`);
    assert.deepEqual(r.out.trim().split('\n'), ['in flight 64', 'written 64 distinct 64', 'holder m state RESIGNED', 'pool blocked true', 'closed true true']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a call on a closed client or leadership through the queue rejects naming the problem', { timeout: 120_000 }, async () => {
  requireBroker();
  const c = client('queue-closed');
  const l = await c.acquire(unique('closed'), 'm', { timeoutMs: 60_000 });
  // Bad arguments are refused before anything reaches the library.
  const submitted = runner.stats().submitted;
  assert.throws(() => l.produce('\ud800', 'x'), (e) => e instanceof KrabkaError && e.category === 'invalid_utf8' && /topic/.test(e.message));
  assert.throws(() => l.produce(null, 'x'), { name: 'TypeError', message: /topic must be a non-empty string, got null/ });
  assert.throws(() => l.produceBatch([{ topic: 't', value: 5 }]), { name: 'TypeError', message: /messages\[0\]\.value must be a Buffer or a string, got a number/ });
  assert.throws(() => l.produce('t', 'x', { headers: { 'a\u0000b': 'v' } }), { name: 'RangeError', message: /must not contain NUL/ });
  assert.throws(() => l.renew({ timeoutMs: -1 }), RangeError);
  assert.throws(() => l.resign({ successor: 42 }), { name: 'TypeError', message: /successor must be a string or a Buffer/ });
  await assert.rejects(l.produce('t', 'x', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  await assert.rejects(l.resign({ successor: '' }), (e) => e instanceof KrabkaError && e.category === 'empty_member');
  assert.equal(runner.stats().submitted, submitted, 'none of them was submitted');
  assert.equal(l.state, 'ACTIVE');
  await l.close();
  await assert.rejects(l.produce('t', 'x'), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_HANDLE && /closed/.test(e.message));
  await assert.rejects(l.renew(), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_HANDLE);
  assert.deepEqual(await l.ended, await l.ended);
  assert.equal((await l.ended).state, 'CLOSED');
  await c.close();
  await assert.rejects(c.describe('r'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
});

test('the binding works the same inside a worker_threads Worker (its own event queue)', { timeout: 150_000 }, async () => {
  requireBroker();
  const role = unique('worker');
  const topic = unique('worker');
  createTopic(topic);
  const script = `
    const { Worker } = require('node:worker_threads');
    const code = \`
      const { parentPort } = require('node:worker_threads');
      const { Client } = require(\${JSON.stringify(${JSON.stringify(pkg)})});
      (async () => {
        const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': 'queue-worker' });
        const l = await c.acquire(${JSON.stringify(role)}, 'w', { timeoutMs: 60000 });
        const writes = await Promise.all(Array.from({ length: 16 }, (_, i) => l.produce(${JSON.stringify(topic)}, 'w' + i, { partition: 0 })));
        const st = await c.describe(${JSON.stringify(role)});
        await l.resign();
        parentPort.postMessage([writes.length, new Set(writes.map((w) => String(w.offset))).size, st.holder, l.state].join(' '));
        await l.close();
        await c.close();
      })().catch((e) => parentPort.postMessage('failed ' + e.stack));
    \`;
    const w = new Worker(code, { eval: true });
    w.on('message', (m) => console.log(m));
    w.on('error', (e) => { console.log('error ' + e.stack); process.exitCode = 1; });
    w.on('exit', (c) => console.log('worker exit ' + c));
  `;
  const r = await runChild(script);
  assert.equal(r.signal, null, `the child was killed; it printed ${JSON.stringify(r.out)}; stderr:\n${r.err}`);
  assert.equal(r.code, 0, `${r.out}\n${r.err}`);
  assert.deepEqual(r.out.trim().split('\n'), ['16 16 w RESIGNED', 'worker exit 0']);
});
