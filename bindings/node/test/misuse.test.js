'use strict';
// Misuse of the client surface: wrong argument types are refused before
// anything reaches C; a closed client and a closed leadership answer with
// KrabkaError instead of crashing. No broker is contacted.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const k = require('..');
const { Client, KrabkaError, ErrorCode } = k;
const runner = require('../lib/calls');

// A client never connects before its first blocking call.
const offline = () => new Client({ 'bootstrap.servers': '127.0.0.1:1', 'client.id': 'node-misuse' });

test('an unknown property is KrabkaError UNKNOWN_CONFIG naming the key', () => {
  assert.throws(
    () => new Client({ 'bootstrap.servers': '127.0.0.1:1', 'no.such.key': 'x' }),
    (e) => e instanceof KrabkaError && e.code === ErrorCode.UNKNOWN_CONFIG && e.codeName === 'UNKNOWN_CONFIG' && /no\.such\.key/.test(e.message),
  );
});

test('a bad property value is KrabkaError INVALID_CONFIG', () => {
  assert.throws(
    () => new Client({ 'bootstrap.servers': '127.0.0.1:1', 'krabka.lease.ms': -5 }),
    (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_CONFIG,
  );
});

test('numbers and booleans are accepted as property values', async () => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'krabka.lease.ms': 3000, 'krabka.renew.interval.ms': 1000, 'krabka.renew.background': true });
  await c.close();
});

test('blocking calls refuse wrong argument types synchronously with TypeError/RangeError', async () => {
  const c = offline();
  try {
    assert.throws(() => c.acquire(42, 'node-1'), { name: 'TypeError', message: /role must be a string or a Buffer, got a number/ });
    assert.throws(() => c.acquire('role', undefined), { name: 'TypeError', message: /member must be a string or a Buffer/ });
    assert.throws(() => c.acquire('role', 'm', { timeoutMs: -1 }), { name: 'RangeError', message: /timeoutMs must be >= 0/ });
    assert.throws(() => c.acquire('role', 'm', { timeoutMs: '5' }), TypeError);
    assert.throws(() => c.acquire('role', 'm', 5000), { name: 'TypeError', message: /options must be an object/ });
    assert.throws(() => c.tryAcquire('role', 'm', { timeoutMs: 1.5 }), RangeError);
    assert.throws(() => c.describe(null), TypeError);
  } finally {
    await c.close();
  }
});

test('a name the library rejects surfaces as DecodeError with its category', async () => {
  const c = offline();
  try {
    await assert.rejects(c.acquire('', 'node-1', { timeoutMs: 1000 }), (e) => e instanceof KrabkaError && e.category === 'empty_role');
    await assert.rejects(c.describe('x'.repeat(250), { timeoutMs: 1000 }), (e) => e instanceof KrabkaError && e.category === 'role_too_long');
  } finally {
    await c.close();
  }
});

test('close() is idempotent and a closed client rejects with KrabkaError CLOSED', async () => {
  const c = offline();
  const p1 = c.close();
  const p2 = c.close();
  assert.equal(p1, p2);
  await p1;
  assert.equal(c.closed, true);
  await assert.rejects(c.acquire('role', 'node-1'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED && e.fatal === true);
  await assert.rejects(c.tryAcquire('role', 'node-1'), (e) => e.code === ErrorCode.CLOSED);
  await assert.rejects(c.describe('role'), (e) => e.code === ErrorCode.CLOSED);
  await c[Symbol.asyncDispose]();
});

test('an acquire against an unreachable broker fails with a retriable error', async () => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'request.timeout.ms': 1000 });
  try {
    await assert.rejects(c.acquire('role', 'node-1', { timeoutMs: 1500 }), (e) => e instanceof KrabkaError && e.retriable === true);
  } finally {
    await c.close();
  }
});

test('blocking calls run through the event queue, not the libuv pool: pendingCalls counts them and the event loop keeps running', async () => {
  // A "broker" that accepts connections and never answers: every call waits
  // until its timeout, while this (JS) thread goes on.
  const sockets = new Set();
  const silent = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  const c = new Client({ 'bootstrap.servers': `127.0.0.1:${silent.address().port}`, 'request.timeout.ms': 1000 });
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const before = k.pendingCalls();
  try {
    // More calls than the libuv pool has threads (4 unless UV_THREADPOOL_SIZE says otherwise).
    const n = 16;
    const calls = Array.from({ length: n }, () => c.describe('role', { timeoutMs: 1000 }).catch((e) => e));
    assert.equal(k.pendingCalls(), before + n);
    assert.equal(runner.stats().pool, 0, 'nothing runs on the libuv pool');
    const results = await Promise.all(calls);
    for (const r of results) assert.ok(r instanceof KrabkaError && r.retriable, `expected a retriable KrabkaError, got ${r}`);
    assert.equal(k.pendingCalls(), before);
    assert.ok(ticks >= 1, `the event loop kept running (${ticks} ticks of 10 ms)`);
    assert.deepEqual(warnings.filter((w) => /krabka/i.test(`${w.code} ${w.message}`)), [], 'no warning about the pool');
  } finally {
    clearInterval(timer);
    process.off('warning', onWarning);
    await c.close();
    for (const so of sockets) so.destroy();
    silent.close();
  }
});

test('bad names, signals and metadata, and calls on a closed client, are refused naming the problem', async () => {
  const c = offline();
  try {
    assert.throws(() => c.describe('r', { signal: {} }), { name: 'TypeError', message: /options\.signal must be an AbortSignal/ });
    assert.throws(() => c.watch(Symbol('r')), { name: 'TypeError', message: /role must be a string or a Buffer/ });
    await assert.rejects(c.acquire(Buffer.from([0xff, 0xfe]), 'm', { timeoutMs: 1000 }), (e) => e instanceof KrabkaError && e.category === 'invalid_utf8');
    assert.throws(() => c.acquire('\ud800', 'm'), (e) => e instanceof KrabkaError && e.category === 'invalid_utf8' && /lone surrogate/.test(e.message));
    await assert.rejects(c.tryAcquire('r', 'm'.repeat(250), { timeoutMs: 1000 }), (e) => e instanceof KrabkaError && e.category === 'member_too_long');
    await assert.rejects(c.acquire('r', 'm', { metadata: Buffer.alloc(k.MAX_METADATA_BYTES + 1) }), (e) => e instanceof KrabkaError && e.codeName === 'INVALID_ARG' && /4097 bytes/.test(e.message));
  } finally {
    await c.close();
  }
  await assert.rejects(c.leave('r', 'm'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
  await assert.rejects(c.watch('r'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
  assert.throws(() => c.stats(), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
  assert.equal(runner.stats().pending - runner.stats().endWaiters, 0, 'no call of the closed client is left pending');
});
