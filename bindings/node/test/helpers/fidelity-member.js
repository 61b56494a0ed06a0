'use strict';
// A lease holder in its own process, for the pause scenario of
// test/fidelity.test.js on a real broker (a process can be stopped with
// SIGSTOP; a client of the test's own process cannot).
//
//   node fidelity-member.js BOOTSTRAP ROLE MEMBER LEASE_MS RENEW_MS
//
// Acquires ROLE as MEMBER and prints {"event":"acquired","token":"id:epoch"};
// then, per line "produce TOPIC VALUE" on stdin, makes one guarded write and
// prints {"event":"produce","error":null or the error's class name}. Exits
// without resigning when stdin closes.
const readline = require('node:readline');
const { Client } = require('../..');

const [bootstrap, role, member, leaseMs, renewMs] = process.argv.slice(2);
const client = new Client({ 'bootstrap.servers': bootstrap, 'krabka.lease.ms': Number(leaseMs), 'krabka.renew.interval.ms': Number(renewMs), 'krabka.poll.interval.ms': 200 });
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

(async () => {
  const lead = await client.acquire(role, member, { timeoutMs: 60_000 });
  say({ event: 'acquired', token: String(lead.token) });
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const [cmd, topic, value] = line.split(' ');
    if (cmd !== 'produce') throw new Error(`unknown command ${line}`);
    await lead.produce(topic, value, { timeoutMs: 30_000 }).then(() => say({ event: 'produce', error: null }), (e) => say({ event: 'produce', error: e.name }));
  }
  process.exit(0);
})();
