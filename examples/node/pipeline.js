'use strict';
// pipeline: a leader that turns requests into commands exactly once, the
// Node form of examples/c/pipeline.c and examples/go/pipeline. In each term
// the leader reads REQUESTS under the term (read_committed, from the offsets
// committed for the role) and writes one command per request to COMMANDS
// (same partition, "done <request>") with the consumed offsets in the same
// transaction. A deposed leader's late commands and offsets are refused
// together by the broker, and the next term starts exactly after the last
// request whose command was committed (docs/PIPELINES.md). SIGTERM or Ctrl-C
// resigns.
//
//   node examples/node/pipeline.js BOOTSTRAP ROLE MEMBER REQUESTS COMMANDS   (both topics must exist)
const { Client } = require('../../bindings/node'); // require('krabka-coord') in a project

const [bootstrap, role, member, requests, commands] = process.argv.slice(2);
if (!commands) throw new Error('usage: node pipeline.js BOOTSTRAP ROLE MEMBER REQUESTS COMMANDS');
const client = new Client({ 'bootstrap.servers': bootstrap });
const shutdown = new AbortController();
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => shutdown.abort());

(async () => {
  for await (const term of client.elect(role, member, { signal: shutdown.signal })) {
    console.log(`leading term ${term.number} with token ${term.token}`);
    const lead = term.leadership; // the elector renews it
    try {
      const input = await lead.consume([requests]);
      try {
        while (!term.signal.aborted) {
          const recs = await input.poll({ max: 100, timeoutMs: 500 }); // [] when nothing came
          if (recs.length === 0) continue;
          const cmds = recs.map((r) => ({ topic: commands, key: r.key, partition: r.partition, value: `done ${r.value}` }));
          await lead.produceBatch(cmds, { offsets: input.position() }); // commands and offsets: one transaction
          console.log(`dispatched ${cmds.length} commands`);
        }
      } finally {
        input.close();
      }
    } catch (e) {
      console.log(`term ${term.number} over: ${e.codeName || e.name}`); // nothing of the refused write counts
    }
  }
  await client.close();
})();
