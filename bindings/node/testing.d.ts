// Type declarations of require('krabka-coord/testing') (lib/testing.js; kept
// in sync by hand, checked by test/typings.test.js with `tsc --noEmit` on
// test/types/testing-usage.ts).

/// <reference types="node" />

import type { Client, Config, FencingToken, Name } from './index';

/** The longest cluster name in bytes (KRABKA_TESTING_NAME_MAX). */
export declare const NAME_MAX: 64;
/** What a manual clock reads when its cluster is created: 2026-01-01T00:00:00Z, epoch ms. */
export declare const CLOCK_START_MS: 1767225600000;

/** A cluster name no other cluster takes: `<prefix>-<pid>-<n>-<random>`. */
export declare function uniqueName(prefix?: string): string;

/** Options of new Cluster(). */
export interface ClusterOptions {
  /** 1 to 64 ASCII letters, digits, '.', '_', '-' (default: uniqueName()). */
  name?: string | null;
  /** Partition count of every topic of the cluster (default 1). */
  partitions?: number;
  /** The clock follows the system clock instead of moving only when advanced (default false). */
  realTime?: boolean;
}

/** A committed record of a topic partition of an in-process cluster. */
export interface TestingRecord {
  offset: bigint;
  /** null: a null value (a tombstone). */
  value: Buffer | null;
}

/** The clock of one in-process cluster (epoch milliseconds). */
export declare class Clock {
  private constructor();
  /** True when the clock follows the system clock (advance() is refused). */
  readonly realTime: boolean;
  /** The cluster's time, epoch ms. */
  nowMs(): number;
  /** nowMs() as a Date. */
  now(): Date;
  /**
   * Moves a manual clock forward by ms (whole milliseconds) and wakes the
   * timers whose time has come; returns the new time. Does not wait for
   * what they do. KrabkaError INVALID_ARG for a negative amount and on a
   * real-time clock.
   */
  advance(ms: number | bigint): number;
}

/** The node:test context Cluster.forTest needs. */
export interface TestContextLike {
  after(fn: () => unknown): unknown;
}

/** An in-process cluster registered for this process as mem://<name>. */
export declare class Cluster {
  constructor(options?: ClusterOptions);
  /** A Cluster closed when the node:test test ends (t.after). */
  static forTest(t: TestContextLike, options?: ClusterOptions): Cluster;
  readonly name: string;
  /** 'mem://<name>': the bootstrap.servers of its clients. */
  readonly bootstrap: string;
  readonly partitions: number;
  readonly realTime: boolean;
  readonly closed: boolean;
  readonly clock: Clock;
  /** A client config on this cluster: bootstrap.servers plus extra's properties. */
  config(extra?: Config): Config;
  /** A new Client on this cluster; close() closes it. */
  client(extra?: Config): Client;
  /** Every request of the client fails at once (TRANSPORT) until heal(). */
  cut(client: Client): void;
  heal(client: Client): void;
  /** SIGSTOP: its requests hold, its clock freezes, its timers do not fire. */
  pause(client: Client): void;
  resume(client: Client): void;
  /** Its process died: no request reaches the cluster, no resign, no leave. */
  kill(client: Client): void;
  /** false: every request of every client fails at once (TRANSPORT). */
  setAvailable(available: boolean): void;
  /** A blind successor: a new token for role, without a lease. */
  mint(role: Name, options?: { client?: Client }): FencingToken;
  /** The committed records of a partition of topic, in offset order. */
  records(topic: string, partition?: number): TestingRecord[];
  /** The values of records(topic, partition). */
  values(topic: string, partition?: number): Array<Buffer | null>;
  /** Closes its clients, then unregisters the name. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
