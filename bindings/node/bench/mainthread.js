'use strict';
// The cost of every synchronous library call the binding makes, timed one
// call at a time on the MAIN thread, in fresh processes (the cost depended on
// the process's address-space layout; see capi/kc_stack.c). Prints p50, p99
// and max per call per process, and a summary over the processes. No timing
// assertions anywhere.
//   KRABKA_BOOTSTRAP=host:port node bench/mainthread.js [--processes 20] [--samples 5000]
// With KRABKA_BENCH_SAMPLES=1 it prints, per call, each process's p50, p99
// and max as KRABKA-SAMPLE lines (measures <call>-p50, <call>-p99,
// <call>-max: n = the number of processes), which `perfdoc record -bench
// node-mainthread` records (bench/README.md).
//
// The handle reads (leadership token, state, renewDue, ...) need a held
// leadership, so the bench needs a broker: KRABKA_BOOTSTRAP is required.
// The event accessors and queue poll are timed on raw handles made with the
// same koffi functions the binding calls (lib/calls.js), on a completed
// describe event that is read many times (the accessors do not consume it).
// Two controls that do not enter the library (control-*) show what the
// machine and koffi alone give at the same moment.

const { spawnSync } = require('node:child_process');
const os = require('node:os');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const PROCESSES = opt('--processes', 20);
const SAMPLES = opt('--samples', 5000);

function pct(sorted, p) {
  return sorted[Math.round(p * (sorted.length - 1))];
}

async function child() {
  const k = require('..');
  const { native, koffi } = require('../lib/native');
  const { fns } = native();
  const bootstrap = process.env.KRABKA_BOOTSTRAP;
  const run = `${process.pid}-${Date.now()}`;
  const role = `bench-${run}`;
  const client = new k.Client({ 'bootstrap.servers': bootstrap, 'client.id': `mainthread-${run}`, 'krabka.topic': `node-mainthread-${run}` });
  const lead = await client.acquire(role, 'm1', { timeoutMs: 60000 });
  await client.describe(role);

  // Raw handles for the event accessors and the queue (what lib/calls.js does).
  const out = [null];
  const err = Buffer.alloc(512);
  const conf = fns.krabka_conf_new();
  fns.krabka_conf_set(conf, 'bootstrap.servers', bootstrap, err, err.length);
  fns.krabka_conf_set(conf, 'krabka.topic', `node-mainthread-${run}`, err, err.length);
  const cl = [null];
  if (fns.krabka_client_new(conf, cl, err, err.length) !== 0) throw new Error(`client_new: ${err.toString('utf8').replace(/\0.*$/s, '')}`);
  fns.krabka_conf_destroy(conf);
  const q = [null];
  fns.krabka_queue_new(q);
  const rb = Buffer.from(role);
  if (fns.krabka_client_describe_async(cl[0], rb, rb.length, 30000, q[0], 7n, err, err.length) !== 0) throw new Error('describe_async failed');
  let ev = null;
  for (let i = 0; i < 3000 && !ev; i++) {
    fns.krabka_queue_poll(q[0], out);
    ev = out[0];
    if (!ev) await new Promise((r) => setTimeout(r, 10));
  }
  if (!ev) throw new Error('no describe event within 30 s');
  const empty = [null];
  fns.krabka_queue_new(empty);

  const a = new k.FencingToken(4242n, 7);
  const leaseBytes = k.encodeLease({ member: 'node-1', token: a, grantedAt: 1700000000000n, deadline: 1700000030000n });
  const keyBytes = k.encodeKey({ kind: 0, role: 'controller', member: 'node-1' });
  const roleBuf = Buffer.from('controller');
  const v = new k.Verifier();
  const u64 = [0n];
  const i32 = [0];
  const code = [0];
  const fd = [0];

  // Controls, not library calls: koffi's own cost and the machine's noise
  // (a libc function through koffi), and the JavaScript-only token compare.
  const abs = koffi.load('libc.so.6').func('int abs(int)');
  const b = new k.FencingToken(4242n, 8);
  const ops = [
    ['control-koffi-libc-abs', () => abs(-3)],
    ['control-js-token-compare', () => a.compare(b)],
    ['krabka_abi_version', () => fns.krabka_abi_version()],
    ['version', () => k.version()],
    ['queue_poll-empty', () => fns.krabka_queue_poll(empty[0], out)],
    ['queue_fd', () => fns.krabka_queue_fd(empty[0], fd)],
    ['event_type', () => fns.krabka_event_type(ev, i32)],
    ['event_tag', () => fns.krabka_event_tag(ev, u64)],
    ['event_error', () => fns.krabka_event_error(ev, code, err, err.length)],
    ['leadership-token', () => lead.token],
    ['leadership-lease', () => lead.lease],
    ['leadership-state', () => lead.state],
    ['leadership-active', () => lead.active],
    ['leadership-renewDue', () => lead.renewDue()],
    ['leadership-metadata', () => lead.metadata],
    ['client-stats', () => client.stats()],
    ['verifier-highest', () => v.highest('controller')],
    ['rolePartition', () => k.rolePartition('controller', 16)],
    ['murmur2', () => k.murmur2(roleBuf)],
    ['decodeKey', () => k.decodeKey(keyBytes)],
    ['encodeKey', () => k.encodeKey({ kind: 0, role: 'controller', member: 'node-1' })],
    ['decodeLease', () => k.decodeLease(leaseBytes)],
    ['encodeLease', () => k.encodeLease({ member: 'node-1', token: a, grantedAt: 1700000000000n, deadline: 1700000030000n })],
    ['err2name', () => fns.krabka_err2name(2)],
    ['err_is_retriable', () => fns.krabka_err_is_retriable(2)],
  ];

  const res = {};
  for (const [name, fn] of ops) {
    for (let i = 0; i < 100; i++) fn(); // warm up (JIT, first-call paths)
    const s = new Float64Array(SAMPLES);
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      fn();
      s[i] = Number(process.hrtime.bigint() - t0) / 1000;
    }
    s.sort();
    res[name] = { p50: pct(s, 0.5), p99: pct(s, 0.99), max: s[s.length - 1] };
  }

  fns.krabka_event_destroy(ev);
  fns.krabka_queue_destroy(empty[0]);
  fns.krabka_queue_destroy(q[0]);
  fns.krabka_client_destroy(cl[0]);
  v.close();
  await lead.resign().catch(() => {});
  await lead.close();
  await client.close();
  process.stdout.write(JSON.stringify({ koffi: koffi.version, lib: k.libraryPath(), res }) + '\n');
}

function parent() {
  if (!process.env.KRABKA_BOOTSTRAP) {
    console.error('bench/mainthread.js: KRABKA_BOOTSTRAP is not set: the handle reads need a held leadership on a broker ' +
      '(tests/kafka/cluster.sh start, then export KRABKA_BOOTSTRAP=<address it prints>)');
    process.exit(2);
  }
  const per = []; // per process: { call: {p50, p99, max} }
  let info = null;
  for (let p = 0; p < PROCESSES; p++) {
    const r = spawnSync(process.execPath, [__filename, '--child', '--samples', String(SAMPLES)], { encoding: 'utf8', env: process.env, timeout: 300000 });
    if (r.status !== 0) {
      console.error(`bench/mainthread.js: process ${p + 1} failed (status ${r.status}, signal ${r.signal}):\n${r.stderr}`);
      process.exit(1);
    }
    const line = r.stdout.trim().split('\n').pop();
    const got = JSON.parse(line);
    info = got;
    per.push(got.res);
    process.stderr.write(`process ${p + 1}/${PROCESSES}: krabka_abi_version p99 ${got.res.krabka_abi_version.p99.toFixed(2)} µs\n`);
  }
  const calls = Object.keys(per[0]);
  if (process.env.KRABKA_BENCH_SAMPLES === '1') {
    console.log(`KRABKA-SETTING\tnode\t${process.version}`);
    console.log(`KRABKA-SETTING\tkoffi\t${info.koffi}`);
    console.log(`KRABKA-SETTING\tlibrary\t${info.lib}`);
    console.log(`KRABKA-SETTING\tprocesses\t${PROCESSES}`);
    console.log(`KRABKA-SETTING\tsamples_per_call_per_process\t${SAMPLES}`);
    console.log('KRABKA-SETTING\tmethod\teach call timed alone (process.hrtime.bigint around it, ~0.1 µs of the figure is the clock), main thread, after 100 warm-up calls; a sample is one process\'s p50, p99 or max of that call');
    for (const c of calls) {
      for (const m of ['p50', 'p99', 'max']) {
        for (const r of per) console.log(`KRABKA-SAMPLE\t${c}-${m}\tus\t${r[c][m]}\t${c}, main thread: one fresh process's ${m} of ${SAMPLES} calls`);
      }
    }
  }
  const agg = (c, m, f) => f(per.map((r) => r[c][m]));
  const med = (xs) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const mx = (xs) => Math.max(...xs);
  const mn = (xs) => Math.min(...xs);
  console.log(`node ${process.version}, koffi ${info.koffi}, ${PROCESSES} processes x ${SAMPLES} calls each, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`${'call (main thread, µs)'.padEnd(24)} ${'p50 med'.padStart(9)} ${'p99 min'.padStart(9)} ${'p99 med'.padStart(9)} ${'p99 max'.padStart(9)} ${'max max'.padStart(9)}`);
  for (const c of calls) {
    console.log(`${c.padEnd(24)} ${agg(c, 'p50', med).toFixed(2).padStart(9)} ${agg(c, 'p99', mn).toFixed(2).padStart(9)} ${agg(c, 'p99', med).toFixed(2).padStart(9)} ${agg(c, 'p99', mx).toFixed(2).padStart(9)} ${agg(c, 'max', mx).toFixed(2).padStart(9)}`);
  }
}

if (args.includes('--child')) {
  child().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  parent();
}
