'use strict';
// A pipeline worker in its own process, for test/pipeline.test.js.
//
//   node pipeline-worker.js BOOTSTRAP ROLE MEMBER REQUESTS COMMANDS
//
// Campaigns for ROLE as MEMBER (short leases) and, while it holds it, reads
// REQUESTS under the term (leadership.consume) and turns every request
// "req-<n>" into one command "cmd-<n>" on COMMANDS (same partition). Each
// poll's records are written by one concurrent writer per partition
// (produceBatch with that partition's offset: several writers per term,
// committed together by group commit). When the term ends (fenced, expired,
// resigned) it campaigns again. Prints one JSON line per event (acquired,
// wrote, ended, resigned); reads "resign" / "resign-to MEMBER" from stdin;
// the end of stdin leaves.

const readline = require('node:readline');
const { Client, KrabkaError, ErrorCode } = require('../..');

const [bootstrap, role, member, requests, commands] = process.argv.slice(2);
const BATCH = 40;
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

const cmds = { resign: false, successor: null, exit: false };
readline.createInterface({ input: process.stdin }).on('line', (l) => {
  if (l === 'resign') Object.assign(cmds, { resign: true, successor: null });
  else if (l.startsWith('resign-to ')) Object.assign(cmds, { resign: true, successor: l.split(' ')[1] });
});
process.stdin.on('end', () => {
  cmds.exit = true;
});

async function term(lead) {
  const input = await lead.consume([requests]);
  try {
    say({ event: 'acquired', token: String(lead.token), committed: input.committed().map((o) => [o.partition, String(o.offset)]) });
    while (!cmds.exit) {
      if (cmds.resign) {
        cmds.resign = false;
        await lead.resign(cmds.successor ? { successor: cmds.successor } : undefined);
        say({ event: 'resigned', token: String(lead.token) });
        return;
      }
      if (lead.renewDue()) await lead.renew();
      const recs = await input.poll({ max: BATCH, timeoutMs: 250 });
      if (recs.length === 0) continue;
      const byPart = new Map();
      for (const r of recs) {
        if (!byPart.has(r.partition)) byPart.set(r.partition, []);
        byPart.get(r.partition).push(r);
      }
      const writes = [...byPart].map(([p, rs]) =>
        lead.produceBatch(
          rs.map((r) => ({ topic: commands, value: `cmd-${r.value.toString().slice(4)}`, partition: p })),
          { offsets: [{ topic: requests, partition: p, offset: rs[rs.length - 1].offset + 1n }] },
        ),
      );
      const results = await Promise.allSettled(writes);
      for (const r of results) if (r.status === 'rejected') throw r.reason;
      say({ event: 'wrote', n: recs.length, writers: writes.length, token: String(lead.token) });
    }
  } finally {
    input.close();
  }
}

async function main() {
  const client = new Client({
    'bootstrap.servers': bootstrap,
    'client.id': `node-pipe-${member}`,
    'krabka.lease.ms': 2500,
    'krabka.renew.interval.ms': 700,
    'krabka.challenge.stagger.ms': 300,
    'krabka.poll.interval.ms': 100,
    'request.timeout.ms': 2000,
  });
  say({ event: 'started' });
  while (!cmds.exit) {
    let lead;
    try {
      lead = await client.acquire(role, member, { timeoutMs: 5000 });
    } catch (e) {
      if (!(e instanceof KrabkaError) || e.code !== ErrorCode.TIMEOUT) await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    cmds.resign = false;
    try {
      await term(lead);
    } catch (e) {
      say({ event: 'ended', error: e instanceof KrabkaError ? e.name + ':' + e.codeName : String(e), token: String(lead.token) });
    } finally {
      await lead.close();
    }
  }
  await client.close();
}

main().catch((e) => {
  process.stderr.write(`pipeline-worker: ${e.stack}\n`);
  process.exit(1);
});
