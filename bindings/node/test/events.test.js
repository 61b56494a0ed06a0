'use strict';
// Leadership events, log events, statistics and the completion path that
// holds no libuv pool thread, on a real single-node Kafka ($KRABKA_BOOTSTRAP).

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const k = require('..');
const { Client, FencedError, KrabkaError, ErrorCode, pendingCalls } = k;
const runner = require('../lib/calls');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const unique = (what) => `node-ev-${what}-${process.pid}-${Date.now().toString(36)}`;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
const conf = (extra = {}) => {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run the live tests under `make test`');
  return { 'bootstrap.servers': bootstrap, ...SHORT, ...extra };
};

test('lead.ended resolves fenced when a restarted member takes over', async () => {
  const role = unique('ended');
  const old = new Client(conf({ 'krabka.renew.background': true }));
  const fresh = new Client(conf());
  // lead.ended alone does not keep a process alive (by design): this test
  // program has nothing else to do while it waits, so it keeps itself alive.
  const keep = setInterval(() => {}, 1000);
  try {
    const lead = await old.acquire(role, 'node-a', { timeoutMs: 30000 });
    assert.equal(lead.ended, lead.ended, 'the same Promise on every access');
    let settled = false;
    lead.ended.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(settled, false);
    const newer = await fresh.acquire(role, 'node-a', { timeoutMs: 30000 });
    assert.ok(newer.token.supersedes(lead.token));
    const end = await lead.ended; // the old incarnation's next background renewal is refused
    assert.equal(end.state, 'FENCED');
    assert.ok(end.error instanceof FencedError);
    assert.match(end.reason, /fenced/);
    assert.equal(lead.state, 'FENCED');
    await newer.resign();
    const e2 = await newer.ended;
    assert.equal(e2.state, 'RESIGNED');
    assert.equal(e2.error.code, ErrorCode.NOT_LEADER);
  } finally {
    clearInterval(keep);
    await old.close();
    await fresh.close();
  }
});

test('log events arrive on the JavaScript thread at their levels', async () => {
  const role = unique('log');
  const c = new Client(conf({ 'krabka.log.level': 'debug', 'client.id': 'node-log' }));
  const lines = [];
  c.on('log', (l) => lines.push(l));
  const lead = await c.acquire(role, 'node-a', { timeoutMs: 30000 });
  const token = String(lead.token);
  await lead.resign();
  await c.close(); // drains the last lines
  assert.ok(lines.some((l) => l.level === 'DEBUG' && l.message.startsWith('krabka: registered') && l.message.includes(role)), JSON.stringify(lines));
  assert.ok(lines.some((l) => l.level === 'INFO' && l.message.startsWith('krabka: role won client=node-log') && l.message.includes(`token=${token}`)));
  assert.ok(lines.some((l) => l.level === 'INFO' && l.message.includes('state=RESIGNED')));
});

test('client.stats() counts what happened', async () => {
  const role = unique('stats');
  const c = new Client(conf({ 'client.id': 'node-stats' }));
  try {
    const lead = await c.acquire(role, 'node-a', { timeoutMs: 30000 });
    await lead.renew();
    const s = c.stats();
    const r = s.roles[role];
    assert.equal(s.client_id, 'node-stats');
    assert.equal(s.leaders, 1);
    assert.equal(r.acquisitions, 1);
    assert.equal(r.renewals_ok, 1);
    assert.equal(r.is_leader, true);
    assert.equal(r.token, String(lead.token));
    assert.ok(r.lease_remaining_ms > 0 && r.lease_remaining_ms <= 3000);
    await lead.resign();
    const after = c.stats().roles[role];
    assert.equal(after.is_leader, false);
    assert.equal(after.ends_resigned, 1);
  } finally {
    await c.close();
  }
});

test('50 pending acquires and 50 watches hold no libuv pool thread: file reads go on', async () => {
  const before = pendingCalls();
  const role = unique('many');
  const holder = new Client(conf({ 'krabka.lease.ms': 60000, 'krabka.renew.interval.ms': 20000 }));
  const waiters = new Client(conf({ 'krabka.poll.interval.ms': 5000 }));
  try {
    await holder.acquire(role, 'holder', { timeoutMs: 30000 });
    const pending = [];
    let settled = 0;
    for (let i = 0; i < 50; i++) {
      const p = waiters.acquire(role, `w${i}`);
      p.then(
        () => settled++,
        () => settled++,
      );
      pending.push(p);
    }
    // Every waiter registered: 51 members in the roster.
    let st;
    for (let i = 0; i < 600; i++) {
      st = await holder.describe(role, { timeoutMs: 30000 });
      if (st.roster.length === 51) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(st.roster.length, 51);
    // 50 watches, each with a next() pending past the current state.
    const watches = [];
    for (let i = 0; i < 50; i++) watches.push(await waiters.watch(role));
    const firsts = [];
    for (const w of watches) {
      for (;;) {
        const { value } = await w.next();
        if (value.kind === 'ROSTER_CHANGED') break; // the current state: the holder, then the roster
      }
      const p = w.next();
      p.then(() => settled++);
      firsts.push(p);
    }
    // 200 file reads on the libuv pool (4 threads) all complete while the 50
    // acquires still wait: none of them holds a pool thread.
    const file = path.join(__dirname, 'events.test.js');
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 200; i++) await fs.promises.readFile(file);
    const us = Number(process.hrtime.bigint() - t0) / 1000 / 200;
    assert.equal(settled, 0, 'an acquire or a watch settled while nothing changed');
    assert.equal(runner.stats().pool, 0, 'krabka calls on the libuv pool');
    assert.equal(pendingCalls(), before + 100, 'the 50 acquires and 50 next() calls are in flight on the event queue');
    console.log(`# 200 readFile calls with 50 acquires and 50 watches pending: ${us.toFixed(0)} µs per read`);
    await waiters.close(); // every pending acquire rejects with CLOSED
    const results = await Promise.allSettled(pending);
    const ends = await Promise.all(firsts); // the closed client ends every watch
    assert.ok(ends.every((r) => r.done === true));
    assert.ok(results.every((r) => r.status === 'rejected' && r.reason instanceof KrabkaError && r.reason.code === ErrorCode.CLOSED));
  } finally {
    await waiters.close();
    await holder.close();
  }
});

test('a process with a pending ended exits; a pending acquire keeps it alive', () => {
  const lib = require.resolve('..');
  const role = unique('exit');
  const script = `
    const { Client } = require(${JSON.stringify(lib)});
    (async () => {
      const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)} });
      const lead = await c.acquire(${JSON.stringify(role)}, 'node-a', { timeoutMs: 30000 });
      lead.ended.then((e) => console.log('ended', e.state));
      const w = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)} });
      w.acquire(${JSON.stringify(role)}, 'node-b').catch((e) => console.log('acquire', e.codeName));
      setTimeout(() => w.close(), 300).unref(); // only the pending acquire keeps the process alive until then
    })();
  `;
  const out = execFileSync(process.execPath, ['-e', script], { env: process.env, timeout: 120000 }).toString();
  assert.equal(out.trim(), 'acquire CLOSED');
});

test('a watch follows two failovers, with the same fields as everywhere', async () => {
  const role = unique('watch');
  const watcher = new Client(conf());
  const a = new Client(conf());
  const b = new Client(conf());
  try {
    const w = await watcher.watch(role);
    const la = await a.acquire(role, 'node-a', { timeoutMs: 30000 });
    await la.close(); // no resign: node-b waits out the lease
    const lb = await b.acquire(role, 'node-b', { timeoutMs: 30000 });
    await lb.resign();
    const la2 = await a.acquire(role, 'node-a', { timeoutMs: 30000 });
    const seen = [];
    for await (const ev of w) {
      seen.push(ev);
      if (ev.kind === 'HOLDER_CHANGED' && ev.holder === 'node-a' && ev.prevHolder === 'node-b') break; // closes the watch
    }
    const hc = seen.filter((e) => e.kind === 'HOLDER_CHANGED');
    assert.deepEqual(hc.map((e) => [e.prevHolder, e.holder]), [[null, 'node-a'], ['node-a', 'node-b'], ['node-b', 'node-a']]);
    assert.ok(hc[1].token.supersedes(hc[0].token) && hc[2].token.supersedes(hc[1].token));
    assert.ok(hc[1].prevToken.equals(hc[0].token) && hc[2].token.equals(la2.token));
    assert.ok(seen.some((e) => e.kind === 'ROLE_FREE'));
    assert.ok(seen.every((e) => e.role === role && e.atMs > 0n && typeof e.offset === 'bigint' && Array.isArray(e.roster)));
    assert.deepEqual(await w.next(), { done: true, value: undefined });
    await la2.close();
  } finally {
    await watcher.close();
    await a.close();
    await b.close();
  }
});
