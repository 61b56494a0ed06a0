#!/usr/bin/env node
// Demo host in Node: one member of the demo role, over the krabka-coord
// binding (bindings/node).
//
//   node host.mjs <bootstrap> <role> <member> <topic> [max_commands]
//
// While it leads it dispatches numbered commands to <topic> through guarded
// writes (each one a transaction of the role's producer, so the broker
// rejects it once the leadership is superseded), renews the lease when due,
// stops at once on FENCED or an expired lease, and then tries to take the
// role again. Lease settings come from KRABKA_LEASE_MS,
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
  // request.timeout.ms, and the test-only clock offset (the chaos campaign)
  ...Object.fromEntries([
    ['KRABKA_REQUEST_TIMEOUT_MS', 'request.timeout.ms'],
    ['KRABKA_TEST_CLOCK_OFFSET_MS', 'krabka.test.clock.offset.ms'],
  ].filter(([e]) => (process.env[e] ?? '').trim() !== '').map(([e, k]) => [k, envMs(e, 0)])),
});

let seq = 0;

// Dispatches while leading. Resolves true when maxCommands was reached.
async function lead(leadership) {
  const token = leadership.token.toString();
  emit('ACQUIRED', { token, deadline: leadership.lease.deadline });
  let op = 'dispatch';
  for (;;) {
    try {
      if (leadership.renewDue()) {
        op = 'renew';
        await leadership.renew();
        emit('RENEWED', { token, deadline: leadership.lease.deadline });
      }
      op = 'dispatch';
      const next = seq + 1;
      const value = `seq=${next} member=${member} token=${token} at=${Date.now()}`;
      const res = await leadership.produce(topic, value, { key: member, partition: 0 });
      seq = next;
      emit('DISPATCHED', { seq, token, partition: res.partition, offset: res.offset });
      if (maxCommands > 0 && seq >= maxCommands) {
        await leadership.resign();
        emit('RESIGNED', { token });
        return true;
      }
    } catch (err) {
      if (err instanceof kc.FencedError) {
        errorEvent('FENCED', op, err, { token, seq: seq + 1 });
        return false;
      }
      if (err instanceof kc.LeaseExpiredError) {
        errorEvent('EXPIRED', op, err, { token, seq: seq + 1 });
        return false;
      }
      errorEvent('ERROR', op, err, { token });
      if (leadership.state !== 'ACTIVE') return false;
    }
    await sleep(dispatchIntervalMs);
  }
}

async function main() {
  emit('STARTED', { lang: 'node', pid: process.pid, library: kc.version() });
  let standby = false;
  while (maxCommands <= 0 || seq < maxCommands) {
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
