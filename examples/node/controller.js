'use strict';
// controller: a host run by the elector (client.elect), the Node form of
// examples/c/controller.c and examples/go/controller. Commands go out only
// inside a term, each one a guarded write under the term's token; the
// broker refuses a deposed term's writes, and term.signal ends the work
// when the term is over. SIGTERM or Ctrl-C resigns: a standby takes over at once.
//
//   node examples/node/controller.js BOOTSTRAP ROLE MEMBER TOPIC   (the topic must exist)
//
// runController() is the controller itself; controller.test.js tests it on
// an in-process cluster (require('krabka-coord/testing')), with no broker.
const { setTimeout: sleep } = require('node:timers/promises');
const { Client } = require('../../bindings/node'); // require('krabka-coord') in a project

/**
 * Runs the controller of `member` for `role` on client until signal aborts:
 * one command to topic every paceMs while leading; log(line) reports what
 * happens.
 */
async function runController({ client, role, member, topic, signal, paceMs = 500, log = console.log }) {
  const elector = client.elect(role, member, { signal });
  elector.on('leader', ({ holder, token }) => log(`NEW_LEADER ${holder} ${token}`));
  let n = 0;
  for await (const term of elector) { // one turn per won term; exits on shutdown
    log(`STARTED term ${term.number} token ${term.token}`);
    term.on('atRisk', () => log(`AT_RISK term ${term.number}`));
    while (!term.signal.aborted) {
      await term.leadership.produce(topic, `command ${++n}`, { key: member }).then(
        (r) => log(`written ${r.partition}:${r.offset}`),
        (e) => log(`command ${n} refused: ${e.codeName || e.name}`)); // NOT_LEADER, FENCED after the term
      await sleep(paceMs, null, { signal: term.signal }).catch(() => {});
    }
    log(`STOPPED term ${term.number} reason ${(await term.stopped).reason}`);
  }
}

if (require.main === module) {
  const [bootstrap, role, member, topic] = process.argv.slice(2);
  if (!topic) throw new Error('usage: node controller.js BOOTSTRAP ROLE MEMBER TOPIC');
  const client = new Client({ 'bootstrap.servers': bootstrap });
  const shutdown = new AbortController();
  for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => shutdown.abort());
  runController({ client, role, member, topic, signal: shutdown.signal }).finally(() => client.close());
}

module.exports = { runController };
