'use strict';
// controller: a host run by the elector (client.elect), the Node form of
// examples/c/controller.c and examples/go/controller. Commands go out only
// inside a term, each one a guarded write under the term's token; the
// broker refuses a deposed term's writes, and term.signal ends the work
// when the term is over. SIGTERM or Ctrl-C resigns: a standby takes over at once.
//
//   node examples/node/controller.js BOOTSTRAP ROLE MEMBER TOPIC   (the topic must exist)
const { setTimeout: sleep } = require('node:timers/promises');
const { Client } = require('../../bindings/node'); // require('krabka-coord') in a project

const [bootstrap, role, member, topic] = process.argv.slice(2);
if (!topic) throw new Error('usage: node controller.js BOOTSTRAP ROLE MEMBER TOPIC');
const client = new Client({ 'bootstrap.servers': bootstrap });
const shutdown = new AbortController();
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => shutdown.abort());

(async () => {
  const elector = client.elect(role, member, { signal: shutdown.signal });
  elector.on('leader', ({ holder, token }) => console.log(`NEW_LEADER ${holder} ${token}`));
  let n = 0;
  for await (const term of elector) { // one turn per won term; exits on shutdown
    console.log(`STARTED term ${term.number} token ${term.token}`);
    term.on('atRisk', () => console.log(`AT_RISK term ${term.number}`));
    while (!term.signal.aborted) {
      await term.leadership.produce(topic, `command ${++n}`, { key: member }).then(
        (r) => console.log(`written ${r.partition}:${r.offset}`),
        (e) => console.error(`command ${n} refused: ${e.codeName || e.name}`)); // NOT_LEADER, FENCED after the term
      await sleep(500, null, { signal: term.signal }).catch(() => {});
    }
    console.log(`STOPPED term ${term.number} reason ${(await term.stopped).reason}`);
  }
  await client.close();
})();
