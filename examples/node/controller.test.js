'use strict';
// The controller's failover, tested the way a project tests its own
// controller: with node:test on an in-process cluster
// (require('krabka-coord/testing')), no broker and no waiting out a lease.
//
//   node --test examples/node/controller.test.js
const test = require('node:test');
const assert = require('node:assert/strict');
const { Cluster } = require('../../bindings/node/lib/testing'); // require('krabka-coord/testing') in a project
const { runController } = require('./controller');

const ROLE = 'controller';
const TOPIC = 'commands';

/** runController for member on a client of cluster, with the lines it logs. */
function start(cluster, member) {
  const client = cluster.client();
  const lines = [];
  const shutdown = new AbortController();
  const done = runController({ client, role: ROLE, member, topic: TOPIC, signal: shutdown.signal, paceMs: 2, log: (l) => lines.push(l) });
  const said = (prefix) => lines.filter((l) => l.startsWith(prefix));
  return { client, lines, said, done, stop: () => shutdown.abort() };
}

/** Waits until cond() holds, moving the cluster's clock by stepMs between looks. */
async function eventually(cond, what, clock, stepMs = 0) {
  const end = Date.now() + 10_000; // a bound so that a broken test ends, not a timing check
  while (!(await cond())) {
    assert.ok(Date.now() < end, `gave up waiting for ${what}`);
    if (stepMs) clock.advance(stepMs);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Stops a controller: aborting resigns a held term and ends the loop
 *  (a standby's elector ends once its retry timer fires: the clock moves). */
async function stop(c, clock) {
  c.stop();
  let ended = false;
  c.done.finally(() => { ended = true; });
  await eventually(() => ended, 'the controller to end', clock, 100);
  await c.done;
}

test('the standby takes over when the leader stalls; the stalled leader learns it lost', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = start(cluster, 'a');
  await eventually(() => a.said('written').length >= 2, 'a to lead and write');
  const b = start(cluster, 'b');
  await eventually(async () => (await b.client.describe(ROLE)).roster.map((e) => e.member).join() === 'a,b', 'b standing by');

  cluster.pause(a.client); // a stalls (a long GC pause, SIGSTOP): its renewals stop
  cluster.clock.advance(30_000); // past its lease (krabka.lease.ms defaults to 30 s)
  await eventually(() => b.said('written').length >= 1, 'b to take over', cluster.clock, 100);
  cluster.resume(a.client); // a wakes up believing it leads: the cluster says otherwise
  await eventually(() => a.said('STOPPED term 1').length === 1, 'a to learn it lost');

  await stop(a, cluster.clock);
  await stop(b, cluster.clock);
  assert.equal(b.said('STARTED term 1').length, 1);
  // Every command either controller reported as written is in the topic,
  // and nothing else is: a's writes after b took over were refused.
  assert.equal(cluster.records(TOPIC).length, a.said('written').length + b.said('written').length);
});

test('a command fenced by a blind successor is refused and not written', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = start(cluster, 'a');
  await eventually(() => a.said('written').length >= 1, 'a to lead');
  cluster.mint(ROLE); // another process took the role behind a's back
  await eventually(() => a.said('STOPPED term 1 reason FENCED').length === 1, "a's term to stop FENCED");
  assert.ok(a.lines.some((l) => /^command \d+ refused: FENCED$/.test(l)), a.lines.join('\n'));
  await stop(a, cluster.clock);
  assert.equal(cluster.records(TOPIC).length, a.said('written').length);
});
