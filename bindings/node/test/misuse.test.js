'use strict';
// Misuse of the client surface: wrong argument types are refused before
// anything reaches C; a closed client and a closed leadership answer with
// KrabkaError instead of crashing. No broker is contacted.

const test = require('node:test');
const assert = require('node:assert/strict');
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

test('an acquire against an unreachable broker times out with a retriable error', async () => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'request.timeout.ms': 1000 });
  try {
    await assert.rejects(c.acquire('role', 'node-1', { timeoutMs: 1500 }), (e) => e instanceof KrabkaError && e.retriable === true);
  } finally {
    await c.close();
  }
});
