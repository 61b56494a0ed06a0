'use strict';
// AbortSignal on the blocking calls, on a real broker ($KRABKA_BOOTSTRAP).
// An aborted call rejects with an AbortError; a role that an aborted acquire
// or tryAcquire wins afterwards is resigned and released (a watch sees it
// taken and then freed long before its 5-minute lease could run out); an
// aborted unbounded acquire no longer keeps the process alive; a call on a
// black-holed broker (a listener that never answers) rejects on abort.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const repo = path.resolve(__dirname, '..', '..', '..');
const unique = (what) => `node-abort-${what}-${process.pid}-${Date.now().toString(36)}`;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
// The aborting side holds what it wins for 5 minutes unless it resigns: a
// ROLE_FREE within the test's 2-minute limit can only come from a resign.
const LONG = { ...SHORT, 'krabka.lease.ms': 300000, 'krabka.renew.interval.ms': 100000 };

function requireBroker() {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run under `make test` or export the address of a running broker');
}
const client = (id, extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, ...SHORT, ...extra });

function assertAbortError(e, reason) {
  assert.equal(e.name, 'AbortError', `expected an AbortError, got ${e && e.stack}`);
  assert.equal(e.code, 'ABORT_ERR');
  if (reason !== undefined) assert.equal(e.cause, reason);
  return true;
}

// Waits on a watch for the role to be taken by `member` and then freed.
async function takenThenFreed(watch, member) {
  let taken = null;
  for await (const ev of watch) {
    if (ev.kind === 'HOLDER_CHANGED' && ev.holder === member) taken = ev;
    if (taken && ev.kind === 'ROLE_FREE') return { taken, freed: ev };
  }
  throw new Error('the watch ended before the role was taken and freed');
}

let mktopic = null;
function createTopic(topic) {
  if (!mktopic) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-abort-'));
    mktopic = path.join(dir, 'mktopic');
    execFileSync(process.env.GO || 'go', ['build', '-o', mktopic, './tests/kafka/cmd/ktopic'], { cwd: repo, stdio: 'inherit' });
  }
  execFileSync(mktopic, [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

test('an aborted acquire rejects with AbortError; the role it wins later is resigned, not held', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('acquire');
  // The holder's lease outlasts the test as well: node-2 can take the role
  // only after node-1's resign, however slow the machine (with a short lease
  // a slow watch() let node-1's lease run out first, and its resign then
  // found it superseded).
  const holder = client('abort-holder', LONG);
  const waiter = client('abort-waiter', LONG);
  const observer = client('abort-observer');
  try {
    const l1 = await holder.acquire(role, 'node-1', { timeoutMs: 60_000 });
    const watch = await observer.watch(role);
    const ac = new AbortController();
    const pending = waiter.acquire(role, 'node-2', { signal: ac.signal });
    const reason = new Error('shutting down');
    ac.abort(reason);
    await assert.rejects(pending, (e) => assertAbortError(e, reason));
    // The library's acquire goes on; once node-1 resigns it wins, and the
    // binding resigns at once.
    await l1.resign({ timeoutMs: 30_000 });
    const { taken, freed } = await takenThenFreed(watch, 'node-2');
    assert.ok(taken.token.supersedes(l1.token), `node-2 won with ${taken.token} after ${l1.token}`);
    assert.ok(freed.offset > taken.offset, 'freed after it was taken');
    const s = await observer.describe(role, { timeoutMs: 30_000 });
    assert.ok(s.lease === null || Number(s.lease.deadline) <= Date.now(), `no live lease after the resign: ${JSON.stringify(s.lease, (k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
    await watch.close();
  } finally {
    await Promise.all([holder.close(), waiter.close(), observer.close()]);
  }
});

test('an already aborted signal rejects at once and starts nothing', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('pre');
  const c = client('abort-pre');
  try {
    const signal = AbortSignal.abort();
    await assert.rejects(c.acquire(role, 'node-1', { signal }), (e) => assertAbortError(e, signal.reason));
    await assert.rejects(c.tryAcquire(role, 'node-1', { signal }), (e) => assertAbortError(e));
    await assert.rejects(c.describe(role, { signal }), (e) => assertAbortError(e));
    await assert.rejects(c.leave(role, 'node-1', { signal }), (e) => assertAbortError(e));
    await assert.rejects(c.watch(role, { signal }), (e) => assertAbortError(e));
    // Nothing was started: the member never registered.
    const s = await c.describe(role, { timeoutMs: 30_000 });
    assert.equal(s.roster.length, 0);
    assert.equal(s.holder, null);
    assert.throws(() => c.describe(role, { signal: 'no' }), TypeError);
  } finally {
    await c.close();
  }
});

test('an aborted tryAcquire that wins resigns what it won', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('try');
  const c = client('abort-try', LONG);
  const observer = client('abort-try-observer');
  try {
    const watch = await observer.watch(role);
    const ac = new AbortController();
    const p = c.tryAcquire(role, 'node-1', { signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    const { taken } = await takenThenFreed(watch, 'node-1');
    assert.equal(taken.holder, 'node-1');
    await watch.close();
  } finally {
    await Promise.all([c.close(), observer.close()]);
  }
});

test('renew, produce and resign reject with AbortError; the leadership goes on after an aborted renew or produce', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('lead');
  const topic = unique('guarded');
  createTopic(topic);
  const c = client('abort-lead');
  try {
    const l = await c.acquire(role, 'node-1', { timeoutMs: 60_000 });
    let ac = new AbortController();
    let p = l.renew({ signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    ac = new AbortController();
    p = l.produce(topic, 'aborted', { signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    ac = new AbortController();
    p = l.produceBatch([{ topic, value: 'aborted batch' }], { signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    await l.renew({ timeoutMs: 30_000 });
    const w = await l.produce(topic, 'after', { timeoutMs: 30_000, signal: new AbortController().signal });
    assert.equal(typeof w.offset, 'bigint');
    assert.equal(l.state, 'ACTIVE');
    ac = new AbortController();
    p = l.resign({ signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    // The resign the library already runs still happens.
    const end = await l.ended;
    assert.equal(end.state, 'RESIGNED');
    await l.close();
  } finally {
    await c.close();
  }
});

test('a watch next() aborted keeps its event for the next next()', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('watch');
  const holder = client('abort-watch-holder');
  const observer = client('abort-watch-observer');
  try {
    const watch = await observer.watch(role);
    const ac = new AbortController();
    const p = watch.next({ signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (e) => assertAbortError(e));
    const l = await holder.acquire(role, 'node-1', { timeoutMs: 60_000 });
    let seen = null;
    for await (const ev of watch) {
      if (ev.kind === 'HOLDER_CHANGED') {
        seen = ev;
        break;
      }
    }
    assert.equal(seen.holder, 'node-1');
    assert.equal(seen.token.compare(l.token), 0);
    await l.resign({ timeoutMs: 30_000 });
  } finally {
    await Promise.all([holder.close(), observer.close()]);
  }
});

test('describe and acquire on a black-holed broker reject on abort', { timeout: 120_000 }, async () => {
  // A listener that accepts and never answers: every request waits.
  const sockets = [];
  const server = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = `127.0.0.1:${server.address().port}`;
  const c = new Client({ 'bootstrap.servers': addr, 'client.id': 'abort-blackhole', 'request.timeout.ms': 20000 });
  try {
    const ac = new AbortController();
    const d = c.describe('r', { timeoutMs: 15_000, signal: ac.signal });
    const a = c.acquire('r', 'node-1', { signal: ac.signal });
    // Abort once the broker has the connection: the calls are waiting on it.
    while (sockets.length === 0) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    await assert.rejects(d, (e) => assertAbortError(e));
    await assert.rejects(a, (e) => assertAbortError(e));
  } finally {
    const closing = c.close().catch(() => {});
    for (const s of sockets) s.destroy();
    server.close();
    await closing;
  }
});

test('a process whose only work is an unbounded acquire exits once its signal aborts', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('exit');
  // A holder whose lease outlasts the test: an aborted acquire that still
  // held the child's event loop would keep it alive until the test's limit.
  const holder = client('abort-exit-holder', LONG);
  try {
    await holder.acquire(role, 'node-1', { timeoutMs: 60_000 });
    const script = `
      const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
      const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': 'abort-exit-child' });
      const ac = new AbortController();
      c.acquire(${JSON.stringify(role)}, 'node-2', { signal: ac.signal })
        .then(() => console.log('won'), (e) => console.log('rejected ' + e.name));
      process.stdout.write('waiting\\n', () => ac.abort());
    `;
    const child = spawn(process.execPath, ['-e', script], { env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
    assert.equal(code, 0);
    assert.match(out, /waiting\nrejected AbortError\n/);
  } finally {
    await holder.close();
  }
});
