'use strict';
// Smoke test of installed krabka-coord npm packages (make dist-test). Run from
// a folder outside the repository whose node_modules holds krabka-coord and
// its platform package: takes a role on $KRABKA_BOOTSTRAP, renews, makes one
// guarded write to $KRABKA_SMOKE_TOPIC, checks with describe that the cluster
// names this member with the same token, resigns. Also checks which library
// was loaded ($KRABKA_SMOKE_EXPECT_LIBRARY_UNDER), and that the package
// ships its test aids: require('krabka-coord/testing') fences a holder by a
// blind successor on an in-process cluster (no broker). Prints "smoke: ok ..."
// or throws.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const kc = require('krabka-coord');

async function main() {
  const bootstrap = process.env.KRABKA_BOOTSTRAP;
  const topic = process.env.KRABKA_SMOKE_TOPIC;
  assert.ok(bootstrap && topic, 'set KRABKA_BOOTSTRAP and KRABKA_SMOKE_TOPIC');
  const lib = kc.libraryPath();
  const under = process.env.KRABKA_SMOKE_EXPECT_LIBRARY_UNDER;
  if (under) {
    assert.ok(fs.realpathSync(lib).startsWith(fs.realpathSync(under)), `library ${lib} is not under ${under}`);
  }
  const role = `dist-smoke-js-${process.hrtime.bigint()}`;
  const client = new kc.Client({ 'bootstrap.servers': bootstrap, 'client.id': 'dist-smoke-js' });
  try {
    const lead = await client.acquire(role, 'smoke-1', { timeoutMs: 120000 });
    const token = lead.token;
    await lead.renew({ timeoutMs: 60000 });
    assert.ok(lead.token.equals(token), 'a renewal kept the token');
    const res = await lead.produce(topic, `smoke command token ${token}`, { timeoutMs: 60000 });
    assert.ok(res.partition >= 0 && res.offset >= 0n, `produce result ${res.partition}/${res.offset}`);
    const st = await client.describe(role, { timeoutMs: 60000 });
    assert.equal(st.holder, 'smoke-1');
    assert.ok(st.token.equals(token) && st.current, 'describe shows the minted token as current');
    await lead.resign({ timeoutMs: 60000 });
    await testAids();
    console.log(`smoke: ok: ${kc.version()} (library ${lib}) took ${role} with token ${token}, renewed, wrote offset ${res.offset}, resigned; in-process cluster ok`);
  } finally {
    await client.close();
  }
}

async function testAids() {
  const { Cluster } = require('krabka-coord/testing');
  const cluster = new Cluster();
  try {
    const lead = await cluster.client().acquire('ctl', 'a', { timeoutMs: 60000 });
    cluster.mint('ctl');
    await assert.rejects(lead.produce('commands', 'refused', { timeoutMs: 60000 }), kc.FencedError);
    assert.deepEqual(cluster.records('commands'), []);
  } finally {
    await cluster.close();
  }
}

main().catch((e) => {
  console.error('smoke: FAIL:', e);
  process.exit(1);
});
