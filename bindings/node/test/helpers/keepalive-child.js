'use strict';
// Child process of test/keepalive.test.js: one scenario per run (argv[2]).
// It arms no timer and holds no handle of its own, so only the binding
// keeps its event loop alive. It prints a line per step it finished and
// "done" at the very end; a process that stops before "done" with exit
// code 0 had its event loop drain while a Promise of the binding was
// pending.

const { Client } = require('../..');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const scenario = process.argv[2];
const run = `${process.pid}-${Date.now().toString(36)}`;
const role = (what) => `node-keepalive-${scenario}-${what}-${run}`;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
const client = (extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': `keepalive-${scenario}`, ...SHORT, ...extra });
const say = (line) => process.stdout.write(`${line}\n`);

// n renews started and aborted at once: the library runs them all while
// their Promises have already rejected; their events still come.
function abortedRenews(l, n) {
  for (let i = 0; i < n; i++) {
    const ac = new AbortController();
    l.renew({ signal: ac.signal }).catch(() => {});
    ac.abort();
  }
}

const scenarios = {
  // `ended` first read after the resign returned.
  async 'resign-then-ended'() {
    const c = client();
    const l = await c.acquire(role('r'), 'm', { timeoutMs: 30_000 });
    await l.resign({ timeoutMs: 30_000 });
    say('resigned');
    say(`ended ${(await l.ended).state}`);
    await l.close();
    await c.close();
  },
  // `ended` read while aborted renews and an aborted resign are in flight
  // (the sequence of abort.test.js), five times over.
  async 'aborted-resign'() {
    const c = client();
    for (let i = 0; i < 5; i++) {
      const l = await c.acquire(role(`r${i}`), 'm', { timeoutMs: 30_000 });
      abortedRenews(l, 8);
      const ac = new AbortController();
      const p = l.resign({ signal: ac.signal });
      ac.abort();
      await p.catch((e) => say(`resign ${e.name}`));
      say(`ended ${(await l.ended).state}`);
      await l.close();
    }
    await c.close();
  },
  // The client's close ends its leaderships (state closed).
  async 'client-close'() {
    const c = client();
    const a = await c.acquire(role('a'), 'm', { timeoutMs: 30_000 });
    const b = await c.acquire(role('b'), 'm', { timeoutMs: 30_000 });
    const early = a.ended; // read before the close, b's after
    await c.close();
    say('closed');
    say(`ended a ${(await early).state}`);
    say(`ended b ${(await b.ended).state}`);
  },
  // `ended` read before the leadership's own close().
  async 'leadership-close'() {
    const c = client();
    const l = await c.acquire(role('r'), 'm', { timeoutMs: 30_000 });
    const ended = l.ended;
    await l.close();
    say('closed');
    say(`ended ${(await ended).state}`);
    await c.close();
  },
  // A renew the broker refuses: a client on another coordination topic
  // took the same role (same transactional.id) and minted a newer epoch
  // this client's view never sees.
  async 'fenced-renew'() {
    const r = role('r');
    const old = client({ 'krabka.topic': `node-keepalive-t1-${run}` });
    const fresh = client({ 'krabka.topic': `node-keepalive-t2-${run}` });
    const l = await old.acquire(r, 'old', { timeoutMs: 30_000 });
    const n = await fresh.acquire(r, 'new', { timeoutMs: 30_000 });
    await l.renew({ timeoutMs: 30_000 }).then(
      () => say('renew accepted'),
      (e) => say(`renew ${e.name}`),
    );
    say(`ended ${(await l.ended).state}`);
    await n.resign({ timeoutMs: 30_000 });
    await Promise.all([old.close(), fresh.close()]);
  },
  // Nothing pending but an active leadership's `ended` and an aborted
  // unbounded acquire: neither keeps the process alive, so it exits after
  // "waiting" without "done" and without the client being closed.
  async 'nothing-pending'() {
    // The holder's lease outlasts the parent's limit: if the aborted acquire
    // still held the event loop, nothing would end it and the parent kills
    // the child.
    const holder = client({ 'krabka.lease.ms': 300000, 'krabka.renew.interval.ms': 100000 });
    const c = client();
    const r = role('r');
    const l = await holder.acquire(r, 'holder', { timeoutMs: 30_000 });
    l.ended.then((e) => say(`ended ${e.state}`));
    const ac = new AbortController();
    c.acquire(r, 'waiter', { signal: ac.signal }).then(
      () => say('won'),
      (e) => say(`acquire ${e.name}`),
    );
    ac.abort();
    say('waiting');
    return 'no-done';
  },
};

const fn = scenarios[scenario];
if (!fn) {
  process.stderr.write(`keepalive-child: unknown scenario ${JSON.stringify(scenario)}; one of ${Object.keys(scenarios).join(', ')}\n`);
  process.exit(2);
}
if (!bootstrap) {
  process.stderr.write('keepalive-child: KRABKA_BOOTSTRAP is not set\n');
  process.exit(2);
}
fn().then(
  (r) => {
    if (r !== 'no-done') say('done');
  },
  (e) => {
    process.stderr.write(`keepalive-child ${scenario}: ${e && e.stack}\n`);
    process.exit(1);
  },
);
