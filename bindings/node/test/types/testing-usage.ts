// Compiled with `tsc --noEmit` by test/typings.test.js: a usage sample that
// must type-check against testing.d.ts (require('krabka-coord/testing')).
import test from 'node:test';
import { FencedError, type Client, type FencingToken } from 'krabka-coord';
import { Cluster, Clock, CLOCK_START_MS, NAME_MAX, uniqueName, type ClusterOptions, type TestingRecord } from 'krabka-coord/testing';

test('failover', async (t) => {
  const opts: ClusterOptions = { partitions: 1, realTime: false, name: uniqueName('ts') };
  const cluster: Cluster = Cluster.forTest(t, opts);
  const clock: Clock = cluster.clock;
  const start: number = clock.nowMs();
  const later: number = clock.advance(30_000n) + clock.advance(1);
  const at: Date = clock.now();
  const a: Client = cluster.client({ 'krabka.lease.ms': 3000 });
  const lead = await a.acquire('controller', 'a');
  const minted: FencingToken = cluster.mint('controller', { client: a });
  await lead.produce('commands', 'x').catch((e: unknown) => e instanceof FencedError);
  const recs: TestingRecord[] = cluster.records('commands', 0);
  const vals: Array<Buffer | null> = cluster.values('commands');
  cluster.cut(a);
  cluster.heal(a);
  cluster.pause(a);
  cluster.resume(a);
  cluster.kill(a);
  cluster.setAvailable(true);
  const name: string = cluster.name + cluster.bootstrap + String(cluster.partitions + NAME_MAX + CLOCK_START_MS);
  void [start, later, at, minted, recs, vals, name, cluster.closed, cluster.realTime, clock.realTime, cluster.config()];
  await cluster.close();
});

async function disposable(): Promise<void> {
  await using cluster = new Cluster();
  void cluster;
}
void disposable;
