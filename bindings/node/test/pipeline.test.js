'use strict';
// Pipelines through the Node binding, on real brokers.
//
// 1. The API on $KRABKA_BOOTSTRAP (tv2): leadership.consume -> Input (poll,
//    async iteration, position, committed), guarded writes with offsets
//    (concurrent writers whose offsets merge per partition, an offsets-only
//    batch), the next leader starts at the committed offsets, and bad input:
//    TypeError/RangeError naming the argument, the library's errors naming
//    the topic.
// 2. Exactly once under 20 forced failovers, on tv2 and tv1 at the same
//    time: an input topic receives 10,000 numbered requests ("req-<n>",
//    partition n % 4) in 20 chunks; three worker processes
//    (test/helpers/pipeline-worker.js) campaign for one role and the holder
//    turns every request into one command ("cmd-<n>", same partition), one
//    concurrent writer per partition, each write carrying its partition's
//    consumed offset. After each chunk, once the holder wrote some of it,
//    the holder is failed over: SIGKILL (a new worker replaces it), SIGSTOP
//    until another worker took the role (past the lease; SIGCONT after),
//    resign, or on tv2 a cut link (worker 0 connects through kproxy on the
//    extra listener $KRABKA_BOOTSTRAP_X1; when another worker holds the role
//    at a cut's turn it resigns to worker 0 first, a resign failover, and the
//    cut comes at the next step). tv1 has no such listener: its failovers mix
//    the other three. The command topic is read back read_committed (kread):
//    every command exactly once, in request order per partition (missing 0,
//    duplicated 0, out of order 0); the figures are printed.
// Each fails, never skips, when its variables are missing.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { startProxy } = require('./helpers/kproxy');
const { Client, Input, KrabkaError, ErrorCode } = require('..');

const repo = path.resolve(__dirname, '..', '..', '..');
const WAIT = 120_000; // a bound for one wait (a loaded machine), not a timing check
const SHORT = { 'krabka.lease.ms': 3000, 'krabka.renew.interval.ms': 1000, 'krabka.challenge.stagger.ms': 500 };
const unique = (what) => `node-pipe-${what}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function env(name) {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run the live tests via \`make test\` (tests/kafka/with-clusters.sh)`);
  return v;
}

let tools = null;
function tool(name) {
  if (!tools) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-pipe-'));
    tools = {};
    for (const t of ['ktopic', 'kread']) {
      tools[t] = path.join(dir, t);
      execFileSync(process.env.GO || 'go', ['build', '-o', tools[t], `./tests/kafka/cmd/${t}`], { cwd: repo, stdio: 'inherit' });
    }
  }
  return tools[name];
}
const createTopic = (bootstrap, topic, n) => execFileSync(tool('ktopic'), [bootstrap, topic, String(n)], { stdio: 'ignore' });
function readTopic(bootstrap, topic) {
  const out = execFileSync(tool('kread'), [bootstrap, topic], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

test('a pipeline step: poll, iterate, offsets, the next leader, bad input', async () => {
  const bootstrap = env('KRABKA_BOOTSTRAP');
  const role = unique('step');
  const req = `${role}-req`;
  const cmd = `${role}-cmd`;
  createTopic(bootstrap, req, 2);
  createTopic(bootstrap, cmd, 2);
  const N = 30;
  const client = new Client({ 'bootstrap.servers': bootstrap, 'client.id': 'node-pipe', ...SHORT });
  try {
    const feeder = await client.acquire(`${role}-feeder`, 'feeder', { timeoutMs: 60_000 });
    await feeder.produceBatch(Array.from({ length: N }, (_, n) => ({ topic: req, value: `req-${n}`, partition: n % 2, headers: { n: String(n) } })));
    await feeder.resign();
    await feeder.close();

    const lead = await client.acquire(role, 'a', { timeoutMs: 60_000 });
    assert.throws(() => lead.consume('requests'), { name: 'TypeError', message: /topics must be an array/ });
    assert.throws(() => lead.consume([7]), { name: 'TypeError', message: /topics\[0\] must be a string/ });
    assert.throws(() => lead.consume([]), { name: 'RangeError', message: /must not be empty/ });
    await assert.rejects(lead.consume(['t'.repeat(250)]), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_ARG && /topics\[0\] is longer than 249/.test(e.message));
    assert.throws(() => lead.consume(['bad\udcff']), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_UTF8 && /topics\[0\]/.test(e.message));
    await assert.rejects(lead.consume([`${role}-missing`], { timeoutMs: 5000 }), (e) => e instanceof KrabkaError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && e.message.includes(`${role}-missing`));
    assert.throws(() => lead.produce(cmd, 'x', { offsets: 'r' }), { name: 'TypeError', message: /options.offsets must be an array/ });
    assert.throws(() => lead.produce(cmd, 'x', { offsets: [{ topic: 1, partition: 0, offset: 0 }] }), { name: 'TypeError', message: /offsets\[0\].topic must be a string/ });
    assert.throws(() => lead.produceBatch([], { offsets: [{ topic: req, partition: 0, offset: -1 }] }), { name: 'RangeError', message: /offsets\[0\].offset/ });
    await assert.rejects(lead.produce(cmd, 'x', { offsets: [{ topic: req, partition: 0, offset: 1 }] }), (e) => e.code === ErrorCode.INVALID_ARG && /not read/.test(e.message));

    const input = await lead.consume([req]);
    assert.ok(input instanceof Input);
    assert.deepEqual(input.committed(), [
      { topic: req, partition: 0, offset: 0n },
      { topic: req, partition: 1, offset: 0n },
    ]);
    assert.throws(() => input.poll({ max: 0 }), { name: 'RangeError', message: /options.max/ });
    assert.throws(() => input.poll({ max: '5' }), { name: 'TypeError', message: /options.max/ });
    const got = [];
    while (got.length < 10) got.push(...(await input.poll({ max: 10 - got.length, timeoutMs: 10_000 })));
    for (const r of got) {
      const n = Number(r.value.toString().slice(4));
      assert.equal(r.topic, req);
      assert.equal(r.partition, n % 2);
      assert.equal(r.offset, BigInt(Math.floor(n / 2)));
      assert.equal(r.key, null);
      assert.ok(r.headers.some(([k, v]) => k === 'n' && v.toString() === String(n)));
      assert.ok(r.headers.some(([k]) => k === 'krabka.token'));
    }
    const pos = input.position();
    assert.equal(pos.reduce((s, o) => s + o.offset, 0n), 10n);
    // One writer per record, all at once: offsets merge per partition.
    await Promise.all(got.map((r) => lead.produce(cmd, `cmd-${r.value.toString().slice(4)}`, { partition: r.partition, offsets: [{ topic: req, partition: r.partition, offset: r.offset + 1n }] })));
    assert.deepEqual(input.committed(), pos);
    // A partition the first polls read from (they may all have come from one).
    const moved = pos.find((o) => o.offset > 0n);
    await assert.rejects(lead.produce(cmd, 'x', { offsets: [{ ...moved, offset: moved.offset - 1n }] }), (e) => e.code === ErrorCode.INVALID_ARG && /backwards/.test(e.message));
    const rest = [];
    for await (const r of input) {
      rest.push(r);
      if (got.length + rest.length === N) break;
    }
    await lead.produceBatch([], { offsets: input.position() });
    assert.deepEqual(input.committed(), [
      { topic: req, partition: 0, offset: BigInt(N / 2) },
      { topic: req, partition: 1, offset: BigInt(N / 2) },
    ]);
    assert.deepEqual(await input.poll({ timeoutMs: 300 }), []);
    input.close();
    input.close();
    assert.throws(() => input.position(), (e) => e.code === ErrorCode.INVALID_HANDLE);
    await lead.resign();
    await lead.close();

    const next = await client.acquire(role, 'b', { timeoutMs: 60_000 });
    const input2 = await next.consume([req]);
    assert.deepEqual(input2.committed(), [
      { topic: req, partition: 0, offset: BigInt(N / 2) },
      { topic: req, partition: 1, offset: BigInt(N / 2) },
    ]);
    input2.close();
    await next.close();
    const cmds = readTopic(bootstrap, cmd).map((r) => Number(r.value.slice(4)));
    assert.deepEqual(cmds.sort((a, b) => a - b), got.map((r) => Number(r.value.toString().slice(4))).sort((a, b) => a - b));
  } finally {
    await client.close();
  }
});

test('examples/node/pipeline.js: every request once, and a standby takes over on SIGTERM', { timeout: 180_000 }, async () => {
  const bootstrap = env('KRABKA_BOOTSTRAP');
  const example = path.join(repo, 'examples', 'node', 'pipeline.js');
  const role = unique('example');
  const req = `${role}-req`;
  const cmd = `${role}-cmd`;
  createTopic(bootstrap, req, 2);
  createTopic(bootstrap, cmd, 2);
  const N = 30;
  const start = (member) => {
    const p = spawn(process.execPath, [example, bootstrap, role, member, req, cmd], { stdio: ['ignore', 'ignore', 'inherit'] });
    p.done = new Promise((r) => p.on('exit', (code, sig) => r(code === null ? sig : code)));
    return p;
  };
  const waitCommands = async (n) => {
    const end = Date.now() + WAIT;
    let values = [];
    while (Date.now() < end) {
      values = readTopic(bootstrap, cmd).map((r) => r.value);
      if (values.length >= n) break;
      await sleep(500);
    }
    return values;
  };
  const client = new Client({ 'bootstrap.servers': bootstrap, 'client.id': 'node-pipe-example' });
  const feeder = await client.acquire(`${role}-feeder`, 'feeder', { timeoutMs: 60_000 });
  const feed = (lo, hi) => feeder.produceBatch(Array.from({ length: hi - lo }, (_, i) => ({ topic: req, value: `req-${lo + i}`, partition: (lo + i) % 2 })));
  const procs = [];
  try {
    await feed(0, N);
    procs.push(start('node-1'));
    assert.equal((await waitCommands(N)).length, N);
    procs.push(start('node-2'));
    await sleep(2000); // registered as a standby
    procs[0].kill('SIGTERM');
    assert.equal(await procs[0].done, 0);
    await feed(N, 2 * N);
    const values = await waitCommands(2 * N);
    assert.deepEqual(values.sort(), Array.from({ length: 2 * N }, (_, n) => `done req-${n}`).sort());
  } finally {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.done));
    await feeder.close();
    await client.close();
  }
});

// ---- the failover campaign ---------------------------------------------------

const N_REQ = 10000;
const PARTS = 4;
const FAULTS = 20;
const WORKERS = 3;

class Pipeline {
  constructor(bootstrap, x1, role, req, cmd) {
    Object.assign(this, { bootstrap, x1, role, req, cmd });
    this.workers = [];
    this.spawned = 0;
    this.holder = null;
    this.token = '';
    this.wroteAt = 0;
    this.acquired = 0;
    this.wrote = 0;
    this.ended = {};
    this.wake = null;
    for (let slot = 0; slot < WORKERS; slot++) this.spawn(slot);
  }

  spawn(slot) {
    this.spawned++;
    const bootstrap = slot === 0 && this.x1 ? this.x1 : this.bootstrap;
    const member = `w${slot}-${this.spawned}`;
    const p = spawn(process.execPath, [path.join(__dirname, 'helpers', 'pipeline-worker.js'), bootstrap, this.role, member, this.req, this.cmd], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const w = { slot, member, p, stopped: false, exited: new Promise((r) => p.on('exit', r)) };
    p.stdin.on('error', () => {});
    readline.createInterface({ input: p.stdout }).on('line', (l) => {
      let ev;
      try {
        ev = JSON.parse(l);
      } catch {
        return;
      }
      this.onEvent(w, ev);
    });
    this.workers[slot] = w;
    return w;
  }

  onEvent(w, ev) {
    if (ev.event === 'acquired') {
      this.acquired++;
      Object.assign(this, { holder: w, token: ev.token, wroteAt: 0 });
    } else if (ev.event === 'wrote') {
      this.wrote++;
      if (w === this.holder && ev.token === this.token) this.wroteAt = Date.now();
    } else if (ev.event === 'ended' || ev.event === 'resigned') {
      const k = ev.error || 'Resigned';
      this.ended[k] = (this.ended[k] || 0) + 1;
      if (w === this.holder && ev.token === this.token) this.holder = null;
    }
    if (this.wake) this.wake();
  }

  async until(pred, what) {
    const end = Date.now() + WAIT;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out after ${WAIT} ms waiting for ${what}`);
      await new Promise((r) => {
        this.wake = r;
        setTimeout(r, 50);
      });
    }
  }

  send(w, line) {
    w.p.stdin.write(`${line}\n`);
  }

  async close() {
    for (const w of this.workers) {
      if (w.stopped) w.p.kill('SIGCONT');
      w.p.stdin.end();
    }
    for (const w of this.workers) {
      const t = setTimeout(() => w.p.kill('SIGKILL'), 30_000);
      await w.exited;
      clearTimeout(t);
    }
  }
}

function checkCommands(recs) {
  const seen = new Map();
  const last = new Array(PARTS).fill(-1);
  let order = 0;
  let wrongPartition = 0;
  for (const r of recs) {
    const n = Number(r.value.slice(4));
    seen.set(n, (seen.get(n) || 0) + 1);
    if (n % PARTS !== r.partition) wrongPartition++;
    if (n <= last[r.partition]) order++;
    last[r.partition] = n;
  }
  let missing = 0;
  for (let n = 0; n < N_REQ; n++) if (!seen.has(n)) missing++;
  let duplicated = 0;
  for (const c of seen.values()) if (c > 1) duplicated += c - 1;
  return { read: recs.length, missing, duplicated, outOfOrder: order, wrongPartition };
}

async function campaign(tv, bootstrap, x1, target) {
  const t0 = Date.now();
  const role = unique(tv);
  const req = `${role}-req`;
  const cmd = `${role}-cmd`;
  createTopic(bootstrap, req, PARTS);
  createTopic(bootstrap, cmd, PARTS);
  const proxy = x1 ? await startProxy(x1, target) : null;
  const kinds = proxy ? ['kill', 'stop', 'resign', 'cut'] : ['kill', 'stop', 'resign'];
  const done = Object.fromEntries(kinds.map((k) => [k, 0]));
  const fc = new Client({ 'bootstrap.servers': bootstrap, 'client.id': `node-pipe-feeder-${tv}` });
  const feeder = await fc.acquire(`${role}-feeder`, 'feeder', { timeoutMs: 60_000 });
  const pipe = new Pipeline(bootstrap, proxy ? x1 : null, role, req, cmd);
  let recs;
  try {
    const chunk = N_REQ / FAULTS;
    let cutDue = false;
    for (let i = 0; i < FAULTS; i++) {
      const tFeed = Date.now();
      const msgs = [];
      for (let n = i * chunk; n < (i + 1) * chunk; n++) msgs.push({ topic: req, value: `req-${n}`, partition: n % PARTS });
      await feeder.produceBatch(msgs, { timeoutMs: 60_000 });
      await pipe.until(() => pipe.holder && pipe.wroteAt >= tFeed && pipe.holder.p.exitCode === null, `${tv}: a holder writing chunk ${i}`);
      const holder = pipe.holder;
      const token = pipe.token;
      const takeover = () => pipe.until(() => pipe.holder && pipe.token !== token, `${tv}: a takeover from ${holder.member} (${token})`);
      let kind = cutDue ? 'cut' : kinds[i % kinds.length];
      cutDue = false;
      if (kind === 'cut' && holder.slot !== 0) {
        kind = 'resign';
        cutDue = true;
        pipe.send(holder, `resign-to ${pipe.workers[0].member}`);
        await takeover();
      } else if (kind === 'kill') {
        holder.p.kill('SIGKILL');
        await holder.exited;
        await takeover();
        pipe.spawn(holder.slot);
      } else if (kind === 'stop') {
        holder.p.kill('SIGSTOP');
        holder.stopped = true;
        await takeover(); // a standby took the role: the lease ran out
        holder.p.kill('SIGCONT');
        holder.stopped = false;
      } else if (kind === 'resign') {
        pipe.send(holder, 'resign');
        await takeover();
      } else {
        await proxy.send('cut');
        await takeover();
        await proxy.send('heal');
      }
      done[kind]++;
    }
    // Everything fed: wait until the command topic holds N_REQ commands (or
    // a minute after the last change); read again once the workers are gone.
    recs = readTopic(bootstrap, cmd);
    let changed = Date.now();
    let last = recs.length;
    while (recs.length < N_REQ && Date.now() - changed < WAIT) {
      await sleep(1000);
      recs = readTopic(bootstrap, cmd);
      if (recs.length !== last) [last, changed] = [recs.length, Date.now()];
    }
  } finally {
    await pipe.close();
    await feeder.close();
    await fc.close();
    if (proxy) await proxy.quit();
  }
  recs = readTopic(bootstrap, cmd); // every worker gone: the final log
  const f = checkCommands(recs);
  const faults = Object.entries(done)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(
    `pipeline failover ${tv}: ${N_REQ} requests, ${FAULTS} failovers (${faults}), ${pipe.acquired} terms, ${pipe.wrote} guarded steps, ends ${JSON.stringify(pipe.ended)}; ` +
      `${f.read} commands read back read_committed: missing ${f.missing}, duplicated ${f.duplicated}, out of order ${f.outOfOrder} (${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  assert.equal(Object.values(done).reduce((a, b) => a + b, 0), FAULTS);
  for (const k of ['kill', 'stop', 'resign']) assert.ok(done[k] >= 1, `${tv}: no ${k} failover: ${faults}`);
  if (proxy) assert.ok(done.cut >= 1, `${tv}: no cut link: ${faults}`);
  assert.deepEqual(f, { read: N_REQ, missing: 0, duplicated: 0, outOfOrder: 0, wrongPartition: 0 });
}

test('exactly once under 20 failovers (kill, stop past the lease, resign, cut link), tv2 and tv1 at once', { timeout: 600_000 }, async () => {
  const tv2 = env('KRABKA_BOOTSTRAP');
  const tv1 = env('KRABKA_BOOTSTRAP_TV1');
  const x1 = env('KRABKA_BOOTSTRAP_X1');
  const target = env('KRABKA_BOOTSTRAP_X1_TARGET');
  tool('ktopic');
  const results = await Promise.allSettled([campaign('tv2', tv2, x1, target), campaign('tv1', tv1, null, null)]);
  for (const r of results) if (r.status === 'rejected') throw r.reason;
});
