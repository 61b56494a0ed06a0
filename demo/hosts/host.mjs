#!/usr/bin/env node
// Demo host in Node: one member of the demo role, over the krabka-coord
// binding (bindings/node).
//
//   node host.mjs <bootstrap> <role> <member> <topic> [max_commands]
//
// While it leads it dispatches numbered commands to <topic> through guarded
// writes (each one a transaction of the role's producer, so the broker
// rejects it once the leadership is superseded) from KRABKA_WRITERS
// concurrent writers (default 1; concurrent produce calls on one
// leadership are committed together by the library: run Node with a libuv
// pool at least that large, UV_THREADPOOL_SIZE), renews the lease when due,
// stops at once on FENCED or an expired lease, and then tries to take the
// role again. Sequence numbers count from 1 in each leadership; a writer
// re-sends its number after an error until the leadership ends. The
// library's line of each minted producer epoch becomes a MINTED event
// (token, at_ms). Lease settings come from KRABKA_LEASE_MS,
// KRABKA_RENEW_INTERVAL_MS, KRABKA_CHALLENGE_STAGGER_MS; the pace of
// commands from KRABKA_DISPATCH_INTERVAL_MS; the pause after losing the role
// before queueing again from KRABKA_REJOIN_DELAY_MS (default 1000). KRABKA_COORD_LIBRARY names the
// library (make demo sets it to build/libkrabka_coord.so).
//
// It prints one line per event on stdout (the demo's line protocol, see
// demo/events.go):
//
//   EVENT <unix_ms> <member> <KIND> key=value ...

import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

const require = createRequire(import.meta.url);
const kc = require('../../bindings/node/lib/index.js');

const envMs = (name, def) => {
  const v = (process.env[name] ?? '').trim();
  return v === '' ? def : Number.parseInt(v, 10);
};

const args = process.argv.slice(2);
if (args.length < 4 || args.length > 5) {
  process.stderr.write('usage: host.mjs <bootstrap> <role> <member> <topic> [max_commands]\n');
  process.exit(2);
}
const [bootstrap, role, member, topic] = args;
const maxCommands = args.length === 5 ? Number.parseInt(args[4], 10) : 0;
const dispatchIntervalMs = envMs('KRABKA_DISPATCH_INTERVAL_MS', 250);
const rejoinDelayMs = envMs('KRABKA_REJOIN_DELAY_MS', 1000);
const writers = Math.max(1, envMs('KRABKA_WRITERS', 1));
const pollMs = 250;

function emit(kind, fields = {}) {
  const parts = ['EVENT', String(Date.now()), member, kind];
  for (const [k, v] of Object.entries(fields)) {
    let text = String(v);
    if (text === '' || /[\s"\\=]/.test(text)) text = JSON.stringify(text);
    parts.push(`${k}=${text}`);
  }
  process.stdout.write(parts.join(' ') + '\n');
}

function errorEvent(kind, op, err, fields = {}) {
  if (err instanceof kc.KrabkaError) emit(kind, { op, code: err.codeName, msg: err.reason, ...fields });
  else emit(kind, { op, code: err?.name ?? 'Error', msg: String(err?.message ?? err), ...fields });
}

const client = new kc.Client({
  'bootstrap.servers': bootstrap,
  'client.id': `krabka-demo-${member}`,
  'krabka.lease.ms': envMs('KRABKA_LEASE_MS', 3000),
  'krabka.renew.interval.ms': envMs('KRABKA_RENEW_INTERVAL_MS', 1000),
  'krabka.challenge.stagger.ms': envMs('KRABKA_CHALLENGE_STAGGER_MS', 1000),
  'krabka.poll.interval.ms': 250,
  'krabka.log.level': 'info', // the lines of minted epochs are info
  // request.timeout.ms, and the test-only clock offset (the chaos campaign)
  ...Object.fromEntries([
    ['KRABKA_REQUEST_TIMEOUT_MS', 'request.timeout.ms'],
    ['KRABKA_TEST_CLOCK_OFFSET_MS', 'krabka.test.clock.offset.ms'],
  ].filter(([e]) => (process.env[e] ?? '').trim() !== '').map(([e, k]) => [k, envMs(e, 0)])),
});

// The library's lines of minted producer epochs become MINTED events.
client.on('log', ({ message }) => {
  const key = message.startsWith('krabka: minted a producer epoch') ? 'token'
    : message.startsWith('krabka: own epoch recovery') ? 'new_token' : null;
  if (key === null) return;
  const fields = Object.fromEntries(message.split(' ').filter((f) => f.includes('=')).map((f) => {
    const i = f.indexOf('=');
    return [f.slice(0, i), f.slice(i + 1)];
  }));
  if (fields[key]) emit('MINTED', { token: fields[key], at_ms: fields.at_ms ?? '0' });
});

let acked = 0; // acknowledged commands of this process

// Dispatches while leading: the writers produce, this loop renews.
// Resolves true when maxCommands was reached.
async function lead(leadership) {
  emit('ACQUIRED', { token: leadership.token.toString(), deadline: leadership.lease.deadline });
  const term = { stop: false, reported: false, done: false, seq: 0 };
  const ended = (kind, op, err, token, n) => {
    term.stop = true;
    if (term.reported) return;
    term.reported = true;
    errorEvent(kind, op, err, { token, seq: n });
  };
  const classify = (err) => (err instanceof kc.FencedError ? 'FENCED'
    : err instanceof kc.LeaseExpiredError ? 'EXPIRED' : null);
  const nap = async (ms) => {
    for (let left = ms; left > 0 && !term.stop; left -= 20) await sleep(Math.min(20, left));
  };
  async function writer(w) {
    while (!term.stop) {
      const n = ++term.seq;
      for (let attempt = 1; !term.stop; attempt++) {
        const token = leadership.token.toString(); // read again: an own epoch recovery changes it
        const value = `seq=${n} member=${member} token=${token} writer=${w} try=${attempt} at=${Date.now()}`;
        try {
          const res = await leadership.produce(topic, value, { key: member, partition: 0 });
          emit('DISPATCHED', { seq: n, token, partition: res.partition, offset: res.offset, writer: w });
          acked++;
          if (maxCommands > 0 && acked >= maxCommands) {
            term.done = true;
            term.stop = true;
          }
          break;
        } catch (err) {
          const kind = classify(err);
          if (kind !== null) {
            ended(kind, 'dispatch', err, token, n);
            return;
          }
          errorEvent('ERROR', 'dispatch', err, { token, writer: w });
          if (leadership.state !== 'ACTIVE') {
            ended('ERROR', 'dispatch', err, token, n);
            return;
          }
          await nap(dispatchIntervalMs);
        }
      }
      await nap(dispatchIntervalMs);
    }
  }
  const all = Array.from({ length: writers }, (_, i) => writer(i + 1));
  while (!term.stop) {
    try {
      if (leadership.renewDue()) {
        await leadership.renew();
        emit('RENEWED', { token: leadership.token.toString(), deadline: leadership.lease.deadline });
      }
    } catch (err) {
      const kind = classify(err);
      if (kind !== null) ended(kind, 'renew', err, leadership.token.toString(), 0);
      else {
        errorEvent('ERROR', 'renew', err, { token: leadership.token.toString() });
        if (leadership.state !== 'ACTIVE') ended('ERROR', 'renew', err, leadership.token.toString(), 0);
      }
    }
    await nap(Math.min(dispatchIntervalMs, 100));
  }
  await Promise.all(all);
  if (term.done) {
    await leadership.resign();
    emit('RESIGNED', { token: leadership.token.toString() });
    return true;
  }
  return false;
}

async function main() {
  emit('STARTED', { lang: 'node', pid: process.pid, library: kc.version() });
  let standby = false;
  while (maxCommands <= 0 || acked < maxCommands) {
    let res;
    try {
      res = await client.tryAcquire(role, member, { timeoutMs: 5000 });
    } catch (err) {
      errorEvent('ERROR', 'acquire', err);
      await sleep(pollMs);
      continue;
    }
    if (res.leadership === null) {
      if (!standby) {
        emit('STANDBY', { retry_at: res.retryAt ?? '' });
        standby = true;
      }
      const wait = res.retryAt === null ? pollMs : Number(res.retryAt) - Date.now();
      await sleep(Math.min(Math.max(wait, 10), pollMs));
      continue;
    }
    standby = false;
    try {
      if (await lead(res.leadership)) break;
    } finally {
      await res.leadership.close();
    }
    // Lost the role: stay out for a moment before queueing again.
    await sleep(rejoinDelayMs);
  }
}

let code = 0;
try {
  await main();
} catch (err) {
  errorEvent('ERROR', 'main', err);
  code = 1;
} finally {
  emit('STOPPED');
  await client.close();
}
process.exit(code);
