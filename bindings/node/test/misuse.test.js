'use strict';
// Misuse of the client surface: wrong argument types are refused before
// anything reaches C; a closed client and a closed leadership answer with
// KrabkaError instead of crashing. No broker is contacted.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const k = require('..');
const { Client, KrabkaError, ErrorCode } = k;

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

test('short blocking calls run on the libuv pool (acquire does not): a warning when they fill it, and the event loop keeps running', async () => {
  // UV_THREADPOOL_SIZE is 4 unless set; start that many bounded calls.
  const size = Number.parseInt(process.env.UV_THREADPOOL_SIZE || '4', 10);
  // A "broker" that accepts connections and never answers: every call blocks
  // its pool thread until its timeout, while this (JS) thread serves it.
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
  try {
    const started = Date.now();
    const calls = Array.from({ length: size }, () => c.describe('role', { timeoutMs: 1000 }).catch((e) => e));
    assert.equal(k.pendingCalls(), size);
    const results = await Promise.all(calls);
    for (const r of results) assert.ok(r instanceof KrabkaError && r.retriable, `expected a retriable KrabkaError, got ${r}`);
    assert.ok(Date.now() - started >= 900, 'the calls blocked until their timeout');
    assert.equal(k.pendingCalls(), 0);
    await new Promise((r) => setImmediate(r));
    assert.ok(warnings.some((w) => w.code === 'KRABKA_THREADPOOL'), 'a KRABKA_THREADPOOL warning was emitted');
    assert.ok(ticks >= 20, `the event loop kept running (${ticks} ticks of 10 ms)`);
  } finally {
    clearInterval(timer);
    process.off('warning', onWarning);
    await c.close();
    for (const so of sockets) so.destroy();
    silent.close();
  }
});
