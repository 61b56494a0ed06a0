'use strict';
// A member of a role group in Node: the Node third of the mixed-language
// group example (examples/group/README.md).
//
//   node member.js BOOTSTRAP GROUP SHARDS MEMBER [WEIGHT]
//
// Joins GROUP (SHARDS shards) as MEMBER and prints one JSON line per change
// of its shards: {"member", "event": "assigned", "shard", "token", "held"}
// and {"member", "event": "revoked", "shard", "reason", "held"}, after
// {"event": "ready"} once joined. For each assigned shard it writes one
// guarded record, "<member>:<shard>", to $KRABKA_GROUP_TOPIC (when set)
// under the shard's own token. Leaves the group (handing its shards over)
// when stdin closes; a kill leaves its leases to run out.

const k = require('../../bindings/node'); // require('krabka-coord') in a project

const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function main() {
  const [bootstrap, group, shards, member, weight] = process.argv.slice(2);
  const topic = process.env.KRABKA_GROUP_TOPIC;
  const client = new k.Client({
    'bootstrap.servers': bootstrap,
    'client.id': member,
    'krabka.lease.ms': 3000,
    'krabka.renew.interval.ms': 1000,
    'krabka.challenge.stagger.ms': 500,
    'krabka.poll.interval.ms': 200,
  });
  const m = client.joinGroup(group, Number(shards), member, { weight: weight ? Number(weight) : 1 });
  const held = new Set();
  const sorted = () => [...held].sort((a, b) => a - b);
  m.on('assigned', (e) => {
    held.add(e.shard);
    say({ member, event: 'assigned', shard: e.shard, token: e.token.toString(), held: sorted() });
    if (topic && e.leadership) {
      e.leadership.produce(topic, `${member}:${e.shard}`).catch((err) => {
        say({ member, event: 'write-refused', shard: e.shard, error: err.codeName });
      });
    }
  });
  m.on('revoked', (e) => {
    held.delete(e.shard);
    say({ member, event: 'revoked', shard: e.shard, reason: e.error ? e.error.codeName : null, held: sorted() });
  });
  m.on('stopped', () => say({ member, event: 'stopped' }));
  say({ member, event: 'ready' });
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on('end', resolve));
  await m.leave({ timeoutMs: 30000 }).catch(() => {});
  await m.close();
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
