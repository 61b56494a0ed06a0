#!/usr/bin/env node
'use strict';
// A leader loop: take the role, renew when due, dispatch guarded writes with
// the token, stop at once when fenced. Ctrl-C resigns so a standby takes over
// immediately.
//
//   KRABKA_BOOTSTRAP=127.0.0.1:9092 node examples/leader.js <role> <member> <topic>
// (the topic must exist; run two of them with different members and kill one)

const { Client, FencedError, LeaseExpiredError } = require('..');

async function main() {
  const [role = 'demo', member = `node-${process.pid}`, topic = 'commands'] = process.argv.slice(2);
  const client = new Client({
    'bootstrap.servers': process.env.KRABKA_BOOTSTRAP || '127.0.0.1:9092',
    'client.id': member,
    'krabka.lease.ms': 6000,
    'krabka.renew.interval.ms': 2000,
    'krabka.challenge.stagger.ms': 1000,
  });
  console.log(`${member}: waiting for ${role}`);
  const leadership = await client.acquire(role, member);
  console.log(`${member}: leader of ${role} with token ${leadership.token}`);

  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
  });
  let n = 0;
  try {
    while (!stopping) {
      if (leadership.renewDue()) await leadership.renew();
      const { partition, offset } = await leadership.produce(topic, JSON.stringify({ n: n++, by: member, token: leadership.token }));
      console.log(`${member}: command ${n} at ${partition}/${offset}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    await leadership.resign();
    console.log(`${member}: resigned`);
  } catch (e) {
    if (e instanceof FencedError || e instanceof LeaseExpiredError) console.log(`${member}: lost ${role} (${e.codeName}); stopping at once`);
    else throw e;
  } finally {
    await leadership.close();
    await client.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
