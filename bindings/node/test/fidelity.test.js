'use strict';
// Fidelity of the in-process cluster (require('krabka-coord/testing')): the
// same scenarios run on it and on a real broker, and each test compares what
// the binding reported on both, step by step: events, errors (by class and
// code), states, who holds, what was committed.
//
// Scenarios: election, renewal, resign, kill, pause past the lease, at-risk
// under a cut link, blind successor then a refused write, watch events,
// elector term events. Brokers: $KRABKA_BOOTSTRAP (transaction.version 2)
// for every scenario, $KRABKA_BOOTSTRAP_TV1 for resign, kill and blind; the
// cut link needs $KRABKA_BOOTSTRAP_X1 and its target (kproxy). Missing
// variables fail the tests (make test sets them all).
//
// What must differ, and is therefore not compared:
// - time itself: on the in-process cluster it passes when the test advances
//   the manual clock; on a broker the test sleeps through it. Deadlines are
//   compared within one run (later than before), never as instants.
// - at risk under a cut link: LOST_AT_RISK or EXPIRED depends on which of
//   two timers fires first (a timing): either is "lease lost" on both.
// - pause past the lease: the resumed holder's write is refused by its view
//   of the log (FencedError) or by its own expired deadline
//   (LeaseExpiredError) depending on what runs first after the resume (a
//   timing): either is "refused, fatal"; the record's absence is compared.
// - watch: ROSTER_CHANGED and LEASE_RENEWED come with the timing of
//   registrations and renewals; only the holder changes are compared.
//
// Each comparison is written to build/testing/fidelity/node-<scenario>-<tv>.json.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { Client, KrabkaError } = require('..');
const { Cluster } = require('../lib/testing');
const { within } = require('./helpers/wait');
const { startProxy } = require('./helpers/kproxy');

const repo = path.resolve(__dirname, '..', '..', '..');
const WAIT = 60_000; // a bound for one wait, not a timing check
// Leases long enough that a loaded machine (the suites of several checkouts
// at once) does not run one out between two steps on the broker; the
// scenarios that need time to pass wait a renewal interval or a lease.
const LEASE_MS = 6000;
const RENEW_MS = 2000;
const LEASES = { 'krabka.lease.ms': LEASE_MS, 'krabka.renew.interval.ms': RENEW_MS, 'krabka.challenge.stagger.ms': 500, 'krabka.poll.interval.ms': 200 };
const T = { timeoutMs: WAIT };
const unique = (what) => `node-fid-${what}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errName = (e) => (e instanceof KrabkaError ? `${e.name} ${e.codeName}` : String(e));

/** Resolves to null, or to the error's class and code name. */
const outcome = (p) => p.then(() => null, errName);

// ---- where a scenario runs ------------------------------------------------------

class MemEnv {
  constructor() {
    this.name = 'mem';
    this.cluster = new Cluster();
  }
  client(extra = {}) {
    const { blind, ...rest } = extra; // eslint-disable-line no-unused-vars
    return this.cluster.client({ ...LEASES, ...rest });
  }
  elapse(ms) {
    this.cluster.clock.advance(ms);
  }
  async until(cond, what, stepMs = 0) {
    const end = Date.now() + WAIT;
    while (!(await cond())) {
      assert.ok(Date.now() < end, `mem: gave up waiting for ${what}`);
      if (stepMs) this.elapse(stepMs);
      await sleep(1);
    }
  }
  async kill(c) {
    this.cluster.kill(c);
    await c.close();
  }
  async blind(role) {
    return this.cluster.mint(role);
  }
  topic() {
    return 'commands';
  }
  values(topic) {
    return this.cluster.values(topic).map((v) => String(v));
  }
  close() {
    return this.cluster.close();
  }
}

let tools = null;
function tool(name) {
  if (!tools) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-fidelity-'));
    tools = {};
    for (const t of ['ktopic', 'kread']) {
      tools[t] = path.join(dir, t);
      execFileSync(process.env.GO || 'go', ['build', '-o', tools[t], `./tests/kafka/cmd/${t}`], { cwd: repo, stdio: 'inherit', env: { ...process.env, GOFLAGS: '-buildvcs=false' } });
    }
  }
  return tools[name];
}

class RealEnv {
  constructor(name, bootstrap) {
    this.name = name;
    this.bootstrap = bootstrap;
    this.clients = [];
    this.coordination = unique('coord');
    this.commands = null;
  }
  client(extra = {}) {
    const { blind, bootstrap, ...rest } = extra;
    const conf = { 'bootstrap.servers': bootstrap || this.bootstrap, ...LEASES, ...rest };
    if (blind) conf['krabka.topic'] = this.coordination;
    const c = new Client(conf);
    this.clients.push(c);
    return c;
  }
  elapse(ms) {
    return sleep(ms);
  }
  async until(cond, what) {
    const end = Date.now() + WAIT;
    while (!(await cond())) {
      assert.ok(Date.now() < end, `${this.name}: gave up waiting for ${what}`);
      await sleep(20);
    }
  }
  async kill(c) {
    await c.close(); // ends its leaderships without resigning, as a dead process's
  }
  async blind(role) {
    // Another coordination topic: its acquire mints the role's transactional
    // id again, and the holder's view never sees its lease.
    const b = this.client({ 'krabka.topic': unique('coord-b') });
    return (await b.acquire(role, 'successor', T)).token;
  }
  topic() {
    if (!this.commands) {
      this.commands = unique('commands');
      execFileSync(tool('ktopic'), [this.bootstrap, this.commands, '1'], { stdio: 'inherit' });
    }
    return this.commands;
  }
  values(topic) {
    const out = execFileSync(tool('kread'), [this.bootstrap, topic], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    return out.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).value || '');
  }
  async close() {
    await Promise.allSettled(this.clients.map((c) => c.close()));
  }
}

// ---- the scenarios: the same code on both; each returns what it observed ----

async function election(env, role) {
  const a = env.client();
  const b = env.client();
  const la = await a.acquire(role, 'a', T);
  const obs = [['a acquired', la.state]];
  const r = await b.tryAcquire(role, 'b', T);
  obs.push(['b tryAcquire won', r.leadership !== null, 'retryAt given', r.retryAt !== null]);
  const st = await a.describe(role, T);
  obs.push(['describe', st.holder, st.token.equals(la.token), st.current, st.roster.map((e) => e.member)]);
  return obs;
}

async function renewal(env, role) {
  const a = env.client();
  const la = await a.acquire(role, 'a', T);
  const d0 = la.lease.deadline;
  const obs = [['due at once', la.renewDue()]];
  await env.elapse(RENEW_MS + 100); // past krabka.renew.interval.ms
  obs.push(['due after the interval', la.renewDue()]);
  await la.renew(T);
  obs.push(['renew()', la.lease.deadline > d0, la.lease.token.equals(la.token), la.state, la.renewDue()]);
  const st = await a.describe(role, T);
  obs.push(['describe', st.holder, st.token.equals(la.token), st.lease !== null && st.lease.deadline === la.lease.deadline]);
  return obs;
}

async function resign(env, role) {
  const a = env.client();
  const b = env.client();
  const la = await a.acquire(role, 'a', T);
  assert.equal((await b.tryAcquire(role, 'b', T)).leadership, null); // b registers
  await la.resign(T);
  const obs = [['a after resign', la.state]];
  obs.push(['produce after resign', await outcome(la.produce(env.topic(), 'after resign'))]);
  const lb = (await b.tryAcquire(role, 'b', T)).leadership;
  obs.push(['b takes over at once', lb !== null && lb.token.supersedes(la.token)]);
  obs.push(['describe', (await a.describe(role, T)).holder]);
  return obs;
}

async function kill(env, role) {
  const a = env.client();
  const b = env.client();
  const la = await a.acquire(role, 'a', T);
  const token = la.token;
  await env.kill(a);
  const obs = [['b before the deadline', (await b.tryAcquire(role, 'b', T)).leadership !== null]];
  const st = await b.describe(role, T);
  obs.push(['describe before the deadline', st.holder, st.token.equals(token)]);
  await env.elapse(LEASE_MS + 100);
  const lb = await b.acquire(role, 'b', T);
  obs.push(['b after the deadline', lb.token.supersedes(token)]);
  return obs;
}

async function blind(env, role) {
  const a = env.client({ blind: true, 'krabka.lease.ms': 60000, 'krabka.renew.interval.ms': 20000 });
  const topic = env.topic();
  const la = await a.acquire(role, 'a', T);
  await la.produce(topic, `${role} before`);
  const minted = await env.blind(role);
  const obs = [['minted supersedes', minted.supersedes(la.token)], ['holder after the mint', la.state]];
  obs.push(['write after the mint', await outcome(la.produce(topic, `${role} after`, T))]);
  obs.push(['holder after the write', la.state]);
  obs.push(['committed', env.values(topic).filter((v) => v.startsWith(role)).map((v) => v.slice(role.length))]);
  return obs;
}

async function watchEvents(env, role) {
  const w = env.client();
  const a = env.client();
  const b = env.client();
  const watch = await w.watch(role, T);
  try {
    const la = await a.acquire(role, 'a', T);
    assert.equal((await b.tryAcquire(role, 'b', T)).leadership, null);
    await la.resign(T);
    assert.ok((await b.tryAcquire(role, 'b', T)).leadership);
    const seen = [];
    while (seen.length === 0 || seen[seen.length - 1][1] !== 'b') {
      const { value, done } = await within(watch.next(), `the watch's events (so far ${JSON.stringify(seen)})`, WAIT);
      assert.equal(done, false);
      if (value.kind === 'HOLDER_CHANGED' || value.kind === 'ROLE_FREE') seen.push([value.kind, value.holder, value.prevHolder]);
    }
    return seen;
  } finally {
    watch.close();
  }
}

async function electorTerms(env, role) {
  const a = env.client();
  const b = env.client();
  const ea = a.elect(role, 'a');
  let eb = null;
  try {
    const { value: ta } = await within(ea.next(), "a's term", WAIT);
    const aEvents = ['STARTED'];
    ta.on('stopped', () => aEvents.push('STOPPED'));
    eb = b.elect(role, 'b');
    const leaders = [];
    eb.on('leader', (l) => leaders.push(l.holder));
    await env.until(() => leaders.includes('a'), "b's leader event naming a");
    await ta.leadership.resign(T);
    const stop = await within(ta.stopped, "a's stop", WAIT);
    const { value: tb } = await within(eb.next(), "b's term", WAIT);
    await env.until(() => leaders[leaders.length - 1] === 'b', "b's leader event naming b");
    return [
      ["a's term", ta.number, aEvents, stop.reason],
      ["b's term", tb.number, tb.token.supersedes(ta.token), tb.active],
      ["b's elector", eb.state(), eb.healthy().healthy],
    ];
  } finally {
    await ea.close();
    if (eb) await eb.close();
  }
}

const SCENARIOS = { election, renewal, resign, kill, blind, watch: watchEvents, 'elector-terms': electorTerms };
const TV1_TOO = ['blind', 'kill', 'resign'];

function record(scenario, tv, mem, real) {
  const dir = path.join(process.env.KRABKA_TESTING_WALL_DIR || path.join(repo, 'build', 'testing'), 'fidelity');
  fs.mkdirSync(dir, { recursive: true });
  const same = JSON.stringify(mem) === JSON.stringify(real);
  fs.writeFileSync(path.join(dir, `node-${scenario}-${tv}.json`), `${JSON.stringify({ scenario, broker: tv, mem, real, same })}\n`);
}

function bootstrapOf(variable) {
  const b = process.env[variable];
  assert.ok(b, `${variable} is not set: the fidelity tests need the brokers of \`make test\` (tests/kafka/with-clusters.sh)`);
  return b;
}

async function runOn(env, fn, ...args) {
  try {
    return await fn(env, unique('role'), ...args);
  } finally {
    await env.close();
  }
}

const cases = [...Object.keys(SCENARIOS).map((s) => [s, 'tv2']), ...TV1_TOO.map((s) => [s, 'tv1'])];
for (const [scenario, tv] of cases) {
  test(`[${tv}] ${scenario}: the in-process cluster reports what the broker reports`, { timeout: 180_000 }, async () => {
    const real = new RealEnv(tv, bootstrapOf(tv === 'tv2' ? 'KRABKA_BOOTSTRAP' : 'KRABKA_BOOTSTRAP_TV1'));
    const mem = await runOn(new MemEnv(), SCENARIOS[scenario]);
    const got = await runOn(real, SCENARIOS[scenario]);
    record(scenario, tv, mem, got);
    assert.deepEqual(mem, got, `${scenario} differs between the in-process cluster and the ${tv} broker`);
  });
}

// ---- pause past the lease: the holder in a process of its own on the broker ----

const REFUSED_FATAL = (e) => (e === 'FencedError FENCED' || e === 'LeaseExpiredError LEASE_EXPIRED' || e === 'FencedError' || e === 'LeaseExpiredError' ? 'refused, fatal' : e);

test('[tv2] pause past the lease: the in-process cluster reports what the broker reports', { timeout: 180_000 }, async () => {
  const role = unique('pause');
  const mem = new MemEnv();
  let memObs;
  try {
    const a = mem.client();
    const b = mem.client();
    const la = await a.acquire(role, 'a', T);
    mem.cluster.pause(a);
    mem.elapse(LEASE_MS + 500);
    const lb = await b.acquire(role, 'b', T);
    memObs = [['b takes over while a is paused', lb.token.supersedes(la.token)]];
    mem.cluster.resume(a);
    const e = await outcome(la.produce(mem.topic(), 'a after resume', T));
    memObs.push(["a's write after resume", REFUSED_FATAL(e && e.split(' ')[0])]);
    memObs.push(['committed', mem.values(mem.topic())]);
  } finally {
    await mem.close();
  }
  const real = new RealEnv('tv2', bootstrapOf('KRABKA_BOOTSTRAP'));
  const topic = real.topic();
  const child = spawn(process.execPath, [path.join(__dirname, 'helpers', 'fidelity-member.js'), real.bootstrap, role, 'a', String(LEASE_MS), String(RENEW_MS)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (what) => JSON.parse((await within(lines.next(), what, WAIT)).value);
  let realObs;
  try {
    const acquired = await nextLine("the child's acquire");
    assert.equal(acquired.event, 'acquired');
    process.kill(child.pid, 'SIGSTOP');
    const lb = await real.client().acquire(role, 'b', T); // waits out a's lease
    realObs = [['b takes over while a is paused', String(lb.token) !== acquired.token && lb.token.supersedes(require('..').parseToken(acquired.token))]];
    process.kill(child.pid, 'SIGCONT');
    child.stdin.write(`produce ${topic} ${role}-after-resume\n`);
    const res = await nextLine("the child's write");
    realObs.push(["a's write after resume", REFUSED_FATAL(res.error)]);
    realObs.push(['committed', real.values(topic)]);
  } finally {
    process.kill(child.pid, 'SIGCONT');
    child.stdin.end();
    await within(new Promise((r) => child.on('exit', r)), 'the child to exit', WAIT).catch(() => child.kill('SIGKILL'));
    await real.close();
  }
  record('pause', 'tv2', memObs, realObs);
  assert.deepEqual(memObs, realObs);
});

// ---- at risk under a cut link: kproxy on the broker, cut() in process ----------

async function atRisk(env, role, cut, heal, extra = {}) {
  const c = env.client({ 'krabka.lease.ms': 3000, 'krabka.renew.interval.ms': 1000, 'request.timeout.ms': 2000, ...extra });
  const el = c.elect(role, 'a');
  try {
    const { value: t1 } = await within(el.next(), 'term 1', WAIT);
    const kinds = ['STARTED'];
    for (const k of ['atRisk', 'suspended', 'recovered', 'stopped']) t1.on(k, () => kinds.push(k === 'atRisk' ? 'AT_RISK' : k.toUpperCase()));
    await cut(c);
    await env.until(() => !t1.active, 'the cut term to stop', 100);
    const stop = await t1.stopped;
    const obs = [
      ['events', kinds],
      ['AT_RISK before STOPPED', kinds.includes('AT_RISK') && kinds.indexOf('AT_RISK') < kinds.indexOf('STOPPED')],
      // LOST_AT_RISK or EXPIRED: which timer fires first is a timing
      ['stop', ['LOST_AT_RISK', 'EXPIRED'].includes(stop.reason) ? 'lease lost' : stop.reason],
      ['error', errName(stop.error)],
    ];
    await heal(c);
    let t2 = null;
    const n = el.next().then((r) => { t2 = r.value; });
    await env.until(() => t2 !== null, 'the re-campaign', 100);
    await n;
    obs.push(['re-campaign', t2.number, t2.token.supersedes(t1.token)]);
    return obs;
  } finally {
    await el.close();
  }
}

test('[tv2] at risk under a cut link: the in-process cluster reports what the broker reports', { timeout: 180_000 }, async () => {
  const x1 = bootstrapOf('KRABKA_BOOTSTRAP_X1');
  const target = bootstrapOf('KRABKA_BOOTSTRAP_X1_TARGET');
  const mem = new MemEnv();
  const memObs = await runOn(mem, atRisk, (c) => mem.cluster.cut(c), (c) => mem.cluster.heal(c));
  const proxy = await startProxy(x1, target);
  let realObs;
  try {
    realObs = await runOn(new RealEnv('tv2-x1', x1), atRisk, () => proxy.send('cut'), () => proxy.send('heal'), { bootstrap: x1 });
  } finally {
    await proxy.quit();
  }
  record('at-risk-cut', 'tv2', memObs, realObs);
  assert.deepEqual(memObs, realObs);
});
