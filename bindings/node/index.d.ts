// Type declarations of krabka-coord (kept in sync with lib/ by hand; checked
// by test/typings.test.js, which runs `tsc --noEmit` on test/types/usage.ts).
// The unions of the C enums (error names, states, event types, watch kinds,
// log levels, verdicts) come from abi.d.ts, which internal/gen writes from
// include/krabka_coord.h.

/// <reference types="node" />

import { EventEmitter } from 'node:events';
import type {
  DataCategory,
  ElectorStateName,
  ErrorCodeMap,
  ErrorCodeName,
  EventTypeName,
  GroupEventKindName,
  KindMap,
  LeadershipStateName,
  LogLevelName,
  StopReasonName,
  TermEventKindName,
  VerdictName,
  WatchEventKindName,
} from './abi';

export type { DataCategory, ElectorStateName, ErrorCodeName, EventTypeName, GroupEventKindName, LeadershipStateName, LogLevelName, StopReasonName, TermEventKindName, VerdictName, WatchEventKindName };

/** A role name or member id: a string (encoded as UTF-8) or its UTF-8 bytes. */
export type Name = string | Uint8Array;
/** A Kafka or krabka.* property value. */
export type ConfigValue = string | number | boolean;
/** Kafka client property names (bootstrap.servers, ...) and krabka.* settings. */
export type Config = Record<string, ConfigValue>;

export interface CallOptions {
  /** Bound for the call in milliseconds; 0 or absent = the default
   *  (request.timeout.ms; for acquire: no limit). Must be >= 0. */
  timeoutMs?: number | bigint;
  /** Aborts the wait: the Promise rejects at once with an AbortError (name
   *  'AbortError', code 'ABORT_ERR', cause: signal.reason). The library's
   *  call goes on in the background and its result is disposed of: a role
   *  won by an aborted acquire or tryAcquire is resigned and released, a
   *  watch opened by an aborted watch() is closed, an aborted
   *  renew/produce/resign/leave may still have taken effect. An aborted
   *  acquire (or watch next) no longer keeps the process alive, so a process
   *  with a pending unbounded acquire can exit. */
  signal?: AbortSignal;
}

/** The options of acquire and tryAcquire. */
export interface AcquireOptions extends CallOptions {
  /** The term's metadata (krabka.meta on every lease record of the term it
   *  wins), at most MAX_METADATA_BYTES; null/absent/empty = none. Over the
   *  limit rejects with KrabkaError INVALID_ARG before anything is written. */
  metadata?: Buffer | Uint8Array | null;
  /** The member's metadata, on its registration (RosterEntry.metadata). */
  memberMetadata?: Buffer | Uint8Array | null;
}

export interface ResignOptions extends CallOptions {
  /** Hand over to this member (krabka.successor): if it is registered it
   *  challenges at once and every other standby one stagger later. A
   *  preference, not a promise (docs/PROTOCOL.md 11.3): a member of another
   *  implementation (registered without krabka.rejoin) ignores the header,
   *  so when the successor is one, or one ranks ahead of it, another member
   *  may take the role. Watch the role to learn who took over. */
  successor?: Name | null;
}

/** Headers of a guarded write: an object (or Map) of name -> value, or
 *  [name, value] pairs (a name may repeat). Names starting with `krabka.`
 *  are reserved (KrabkaError INVALID_ARG). */
export type Headers =
  | Record<string, Buffer | Uint8Array | string>
  | ReadonlyMap<string, Buffer | Uint8Array | string>
  | ReadonlyArray<readonly [string, Buffer | Uint8Array | string]>;

export interface ProduceOptions extends CallOptions {
  /** Record headers; krabka.token is added by the library
   *  (krabka.produce.token.header, default true). */
  headers?: Headers | null;
  /** Record key (null/absent = null key). */
  key?: Buffer | Uint8Array | string | null;
  /** Target partition; -1 or absent lets Kafka's key hashing choose. */
  partition?: number;
  /** Consumed input positions (Input.position()) committed in the same
   *  transaction (docs/PIPELINES.md). */
  offsets?: ReadonlyArray<OffsetInput> | null;
}

export interface BatchOptions extends CallOptions {
  /** Consumed input positions (Input.position()) committed in the same
   *  transaction; with offsets, messages may be empty. */
  offsets?: ReadonlyArray<OffsetInput> | null;
}

/** A position in an input partition: offset is the next offset to read
 *  (the last consumed + 1), as Kafka commits it. */
export interface Offset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/** An offset a guarded write carries (offset a bigint or an integer). */
export interface OffsetInput {
  topic: string;
  partition: number;
  offset: bigint | number;
}

/** One committed input record (key/value null: a null key or value). */
export interface InputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: ReadonlyArray<readonly [string, Buffer]>;
}

export interface PollOptions extends CallOptions {
  /** At most this many records (1 to 1000000; default 500). */
  max?: number;
}

/** Input partitions read read_committed under a leadership
 *  (Leadership.consume). Polls of one Input must not overlap. */
export class Input {
  private constructor();
  /** Resolves once at least one record arrived, or to [] when timeoutMs
   *  passed; rejects with the leadership's end once it ended. */
  poll(options?: PollOptions | null): Promise<InputRecord[]>;
  /** The next offset to read per partition. Never blocks. */
  position(): Offset[];
  /** The offsets committed for the role's pipeline group per partition. */
  committed(): Offset[];
  /** Stops reading. Idempotent. */
  close(): void;
  [Symbol.asyncIterator](): AsyncIterator<InputRecord>;
  [Symbol.dispose](): void;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface Message {
  topic: string;
  value: Buffer | Uint8Array | string | null;
  key?: Buffer | Uint8Array | string | null;
  partition?: number;
  headers?: Headers | null;
}

export interface ProduceResult {
  partition: number;
  offset: bigint;
}

/** A fencing token: (producer id, producer epoch), ordered lexicographically. */
export class FencingToken {
  /** Throws DecodeError (category 'negative_token') for negative halves,
   *  RangeError outside int64 / int16. */
  constructor(producerId: bigint | number, producerEpoch: number);
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** (-1, -1): the token of a role nobody has taken. */
  static readonly NO_EPOCH: FencingToken;
  /** Parses "<producer_id>:<producer_epoch>"; DecodeError 'token_form' or 'negative_token'. */
  static parse(text: string | Uint8Array): FencingToken;
  /** -1, 0 or 1 as this is below, equal to or above other. */
  compare(other: FencingToken): -1 | 0 | 1;
  supersedes(other: FencingToken): boolean;
  equals(other: unknown): boolean;
  readonly isNoEpoch: boolean;
  /** "4242:7" */
  toString(): string;
  toJSON(): string;
}

export interface Lease {
  readonly member: string;
  readonly token: FencingToken;
  /** epoch milliseconds */
  readonly grantedAt: bigint;
  /** epoch milliseconds; live while now < deadline */
  readonly deadline: bigint;
}

export interface RosterEntry {
  readonly member: string;
  /** offset of its registration record */
  readonly offset: bigint;
  readonly registeredAt: bigint;
  /** 0 = lease holder or first standby */
  readonly rank: number;
}

/** A roster entry of Client.describe: also the member's metadata. */
export interface StatusRosterEntry extends RosterEntry {
  /** The metadata of its registration (memberMetadata), or null. */
  readonly metadata: Buffer | null;
}

/** Result of Client.describe (the third-party check). */
export interface Status {
  readonly role: string;
  readonly partition: number;
  /** The coordinator's current token (NO_EPOCH if nobody ever took the role). */
  readonly token: FencingToken;
  /** A lease exists and its token is the coordinator's current token. */
  readonly current: boolean;
  /** The member the last lease names, or null. */
  readonly holder: string | null;
  readonly lease: Lease | null;
  /** The term's metadata (krabka.meta of the current lease record), or null. */
  readonly metadata: Buffer | null;
  readonly roster: readonly StatusRosterEntry[];
  /** Undecodable records skipped while reading the partition. */
  readonly skipped: number;
  /** Registrations removed by a tombstone (members that resigned, were
   *  pruned by a winner or left); they are not in `roster`. */
  readonly removed: number;
}

/** 'ACTIVE' | 'FENCED' | 'EXPIRED' | 'RESIGNED' | 'CLOSED' (krabka_leadership_state_t). */
export type LeadershipState = LeadershipStateName;

export interface TryAcquireResult {
  /** The won role, or null when it was not won. */
  leadership: Leadership | null;
  /** When leadership is null: epoch milliseconds at which trying again can
   *  change the answer; null when the role was won. */
  retryAt: bigint | null;
}

/** One line of the library's log ('log' event of a Client). */
export interface LogLine {
  /** 'ERROR' | 'WARNING' | 'INFO' | 'DEBUG' (krabka_log_level_t). */
  level: LogLevelName;
  /** "krabka: role won client=... role=... token=..." */
  message: string;
}

/** How a leadership ended (Leadership.ended). */
export interface LeadershipEnd {
  state: Exclude<LeadershipState, 'ACTIVE'>;
  /** The library's reason text. */
  reason: string;
  /** The error its calls now reject with (FencedError, LeaseExpiredError, ...). */
  error: KrabkaError | null;
}

/** One change of a watched role (the same fields as Go's coord.Event). */
export interface WatchEvent {
  /** 'HOLDER_CHANGED' | 'LEASE_RENEWED' | 'ROSTER_CHANGED' | 'ROLE_FREE' (krabka_watch_event_kind_t). */
  kind: WatchEventKindName;
  role: string;
  /** The member the current lease names (null: no lease). */
  holder: string | null;
  /** The current lease's token (NO_EPOCH without one). */
  token: FencingToken;
  /** HOLDER_CHANGED: the previous lease's member (null: none). */
  prevHolder: string | null;
  prevToken: FencingToken;
  lease: Lease | null;
  /** The term's metadata of the lease record that caused it (null: none). A
   *  change of metadata is a LEASE_RENEWED, delivered even without renewals. */
  metadata: Buffer | null;
  roster: ReadonlyArray<RosterEntry>;
  /** Offset of the record that caused it (-1n: ROLE_FREE by the clock). */
  offset: bigint;
  /** When this client observed it (epoch ms). */
  atMs: bigint;
}

/** client.watch(role): an async iterator of WatchEvents; ends when closed. */
export class Watch implements AsyncIterableIterator<WatchEvent> {
  private constructor();
  readonly role: string;
  next(options?: { signal?: AbortSignal }): Promise<IteratorResult<WatchEvent, undefined>>;
  return(): Promise<IteratorResult<WatchEvent, undefined>>;
  close(): Promise<void>;
  [Symbol.asyncIterator](): Watch;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Client.stats(): docs/STATISTICS.md. */
export interface Stats {
  ts_ms: number;
  client_id: string;
  leaders: number;
  reads: number;
  records_folded: number;
  records_skipped: number;
  view_waits: number;
  acquisitions: number;
  handoffs: number;
  challenges_won: number;
  challenges_lost: number;
  renewals_ok: number;
  renewals_failed: number;
  guarded_writes: number;
  guarded_writes_failed: number;
  guarded_write_latency: { count: number; sum_us: number; max_us: number; buckets: number[]; bounds_ms: number[] };
  ends_fenced: number;
  ends_expired: number;
  ends_resigned: number;
  ends_closed: number;
  roles: Record<string, RoleStats>;
}

export interface RoleStats {
  acquisitions: number;
  handoffs: number;
  challenges_won: number;
  challenges_lost: number;
  renewals_ok: number;
  renewals_failed: number;
  guarded_writes: number;
  guarded_writes_failed: number;
  guarded_write_latency: { count: number; sum_us: number; max_us: number; buckets: number[]; bounds_ms: number[] };
  ends_fenced: number;
  ends_expired: number;
  ends_resigned: number;
  ends_closed: number;
  is_leader: boolean;
  member: string;
  token: string;
  lease_remaining_ms: number;
  view_lag_ms: number;
}

/** The options of client.joinGroup and client.joinSemaphore. */
export interface GroupOptions {
  /** The member's weight (default 1; at least 1): its share of the shards
   *  is its weight over the sum of the eligible members' weights. */
  weight?: number;
  /** Eligible for shards from the start (default true). */
  eligible?: boolean;
  /** Aborting it closes the member (what it holds is resigned). */
  signal?: AbortSignal | null;
}

/** One change of a group member's shards. */
export interface GroupEvent {
  readonly kind: GroupEventKindName;
  /** The shard (or slot) index. */
  readonly shard: number;
  /** The shard's role name. */
  readonly role: string;
  /** The shard's term's token. */
  readonly token: FencingToken;
  /** The term's lease deadline when the event was made (epoch ms; 0n when unknown). */
  readonly deadline: bigint;
  /** ASSIGNED: the shard's leadership, for guarded writes (the group renews,
   *  hands over and resigns it); null on REVOKED. */
  readonly leadership: Leadership | null;
  /** REVOKED: why the term ended (NOT_LEADER: handed over; FENCED,
   *  LEASE_EXPIRED, CLOSED); null on ASSIGNED. */
  readonly error: KrabkaError | null;
}

/** client.joinGroup / joinSemaphore: a member of a role group, an
 *  EventEmitter and an async iterable of its GroupEvents, in order; every
 *  ASSIGNED of a shard is followed by its REVOKED before the next. */
export class GroupMember extends EventEmitter implements AsyncIterableIterator<GroupEvent> {
  private constructor();
  readonly group: string;
  readonly member: string;
  readonly shards: number;
  readonly closed: boolean;
  /** Why the member stopped by itself (CLOSED: its client closed); null
   *  while it runs and after leave() or close(). */
  readonly error: KrabkaError | null;
  /** The next event; { done: true } once the member stopped and every
   *  event was taken. */
  next(): Promise<IteratorResult<GroupEvent>>;
  return(): Promise<IteratorResult<GroupEvent>>;
  [Symbol.asyncIterator](): GroupMember;
  [Symbol.asyncDispose](): Promise<void>;
  /** The shards held now, ascending. Never blocks. */
  held(): number[];
  /** The role name of a shard. */
  shardRole(shard: number): string;
  /** Never blocks. */
  setEligible(eligible: boolean): void;
  /** Never blocks; KrabkaError INVALID_ARG for a weight below 1. */
  setWeight(weight: number): void;
  /** Hands the shards over and leaves the group (runs on the libuv pool). */
  leave(options?: CallOptions): Promise<void>;
  /** Resigns what is held (no handover) and ends the member. Idempotent. */
  close(): Promise<void>;
  on(event: 'assigned', listener: (e: GroupEvent) => void): this;
  on(event: 'revoked', listener: (e: GroupEvent) => void): this;
  on(event: 'stopped', listener: (error: KrabkaError | null) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** The options of client.electorSet. */
export interface ElectorSetOptions {
  /** Campaign again after a lost term (default true); false: a role's loop
   *  ends after its first lost term. */
  recampaign?: boolean;
  /** Aborting it closes the set (every held role is resigned). */
  signal?: AbortSignal | null;
}

/** One event of an ElectorSet: a role's term event, tagged with the role. */
export interface RoleEvent {
  /** The role the event is about. */
  readonly role: string;
  /** ELECTOR_STOPPED is the role's last event (removed, the set closed, or
   *  its loop ended by itself: error says why). */
  readonly kind: TermEventKindName;
  /** 1, 2, ... per role (from 1 again when a role is removed and added
   *  again); 0 on NEW_LEADER. */
  readonly term: number;
  /** The term's token (NEW_LEADER: the new holder's). */
  readonly token: FencingToken;
  /** This member on term events, the new holder on NEW_LEADER. */
  readonly holder: string;
  /** The lease deadline (epoch ms; 0n when unknown). */
  readonly deadline: bigint;
  /** STOPPED: why ('NONE' otherwise). */
  readonly reason: StopReasonName;
  /** STOPPED: the term's error; ELECTOR_STOPPED: why the loop ended (null
   *  when removed or closed); null otherwise. */
  readonly error: KrabkaError | null;
  /** STARTED: the term's leadership, for guarded writes (the set renews and
   *  resigns it); null otherwise. */
  readonly leadership: Leadership | null;
}

/** client.electorSet: one member's election loops over many roles, an
 *  EventEmitter ('event') and an async iterable of every role's
 *  RoleEvents, in order. Per role: STARTED and STOPPED alternate with the
 *  same term number, and a role is won again only after its STOPPED was
 *  delivered (once iterated: after the iteration asked for the next
 *  event). */
export class ElectorSet extends EventEmitter implements AsyncIterableIterator<RoleEvent> {
  private constructor();
  readonly member: string;
  readonly closed: boolean;
  /** How many roles are in the set now. Never blocks. */
  readonly size: number;
  /** How many of them it holds now. Never blocks. */
  readonly heldCount: number;
  /** The next event of any role; { done: true } once the set was closed
   *  and every event was taken. */
  next(): Promise<IteratorResult<RoleEvent>>;
  return(): Promise<IteratorResult<RoleEvent>>;
  [Symbol.asyncIterator](): ElectorSet;
  [Symbol.asyncDispose](): Promise<void>;
  /** Adds a role: it campaigns at once. Never blocks; KrabkaError naming
   *  the role (INVALID_ARG: already in the set, held by this client
   *  outside it; ROLE_TOO_LONG; INVALID_UTF8). */
  add(role: Name): void;
  /** Removes a role (a held term is resigned); resolves once its loop
   *  ended (runs on the libuv pool). INVALID_ARG naming it when it is not
   *  in the set. */
  remove(role: Name, options?: CallOptions): Promise<void>;
  /** Where the role's loop is now; INVALID_ARG naming it when it is not in
   *  the set. Never blocks. */
  state(role: Name): ElectorStateName;
  /** Resigns every held role and ends the set. Idempotent. */
  close(): Promise<void>;
  on(event: 'event', listener: (e: RoleEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** The options of client.elect. */
export interface ElectOptions {
  /** Aborting it resigns a held term (the first standby takes over at
   *  once) and ends the iteration (the `for await` loop exits). Already
   *  aborted: nothing starts, the iteration is empty. */
  signal?: AbortSignal | null;
  /** Campaign again after a lost term (default true); false: the
   *  iteration ends after the first term. */
  recampaign?: boolean;
  /** Start as a candidate (default true); false: withdrawn until
   *  setEligible(true). */
  eligible?: boolean;
  /** The term's metadata on every lease record of each term won (at most
   *  MAX_METADATA_BYTES). */
  metadata?: Buffer | Uint8Array | null;
  /** The member's metadata, on its registration. */
  memberMetadata?: Buffer | Uint8Array | null;
}

/** How a term ended: the reason (FENCED, EXPIRED, RESIGNED, CLOSED,
 *  LOST_AT_RISK) and the KrabkaError its leadership's calls now fail with. */
export interface TermStop {
  readonly reason: Exclude<StopReasonName, 'NONE'>;
  readonly error: KrabkaError | null;
}

/** A NEW_LEADER notice: the log shows another holder or token (this
 *  member's own win included). */
export interface LeaderNotice {
  readonly holder: string;
  readonly token: FencingToken;
  /** The holder's lease deadline, epoch ms (0n: unknown). */
  readonly deadline: bigint;
}

/** One won term of an Elector. */
export class Term extends EventEmitter {
  private constructor();
  readonly elector: Elector;
  readonly role: string;
  readonly member: string;
  /** 1, 2, ... per elector. */
  readonly number: number;
  readonly token: FencingToken;
  /** The last lease deadline reported for the term (epoch ms): the first
   *  lease's, then the one at risk or renewed. */
  readonly deadline: bigint;
  /** For guarded writes under the term's token. The elector renews,
   *  resigns and closes the term; once the term is over the leadership's
   *  calls reject (KrabkaError NOT_LEADER, FencedError). A resign() through
   *  it ends the term as a loss (the elector campaigns again). */
  readonly leadership: Leadership;
  /** Aborts when the term's stop is delivered (reason: the stop's error). */
  readonly signal: AbortSignal;
  /** Resolves once, after the start, when the term stopped. Never rejects. */
  readonly stopped: Promise<TermStop>;
  /** The stop once delivered, else null. */
  readonly stop: TermStop | null;
  /** True until the stop was delivered. */
  readonly active: boolean;
  /** True between an 'atRisk' and the next 'recovered' (or the stop). */
  readonly atRisk: boolean;
  /** True between a 'suspended' and the next 'recovered' (or the stop):
   *  with krabka.elector.ride.outage, no broker answers and the term is
   *  kept under the same token; dispatch nothing meanwhile. */
  readonly suspended: boolean;
  on(event: 'atRisk' | 'suspended' | 'recovered', listener: (deadline: bigint) => void): this;
  on(event: 'stopped', listener: (stop: TermStop) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'atRisk' | 'suspended' | 'recovered', listener: (deadline: bigint) => void): this;
  once(event: 'stopped', listener: (stop: TermStop) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** client.elect(role, member): the election loop of one member, an async
 *  iterable of its Terms, one per won term, in order. The next term is
 *  neither yielded nor campaigned for before the previous one's stop was
 *  delivered and the consumer asked for the next (the next turn of
 *  `for await`). `break`, a throw in the loop body, close() and the signal
 *  resign a held term. An open elector keeps the process alive. */
export class Elector extends EventEmitter implements AsyncIterableIterator<Term> {
  private constructor();
  readonly role: string;
  readonly member: string;
  /** True once closed (close(), the signal, the client closed, the loop ended). */
  readonly closed: boolean;
  /** The term held now, or null. */
  readonly current: Term | null;
  /** The candidacy as last set. */
  readonly eligible: boolean;
  /** The next term; { done: true } once closed (the elector or its
   *  client). Rejects with the KrabkaError that ended the loop (its
   *  ELECTOR_STOPPED event: AUTHORIZATION, ...) when it ended for good. */
  next(): Promise<IteratorResult<Term, undefined>>;
  /** Closes the elector (called by `break` and a throw in `for await`). */
  return(): Promise<IteratorResult<Term, undefined>>;
  /** Withdraws (false: a holder resigns, a standby leaves the roster) or
   *  restores (true: registers again at the tail) the candidacy; resolves
   *  once written. KrabkaError CLOSED after close. */
  setEligible(eligible: boolean, options?: { timeoutMs?: number | bigint }): Promise<void>;
  /** Where the loop is (krabka_elector_state): CAMPAIGNING, HOLDING,
   *  AT_RISK, SUSPENDED or STOPPED (also once closed). Never blocks. */
  state(): Exclude<ElectorStateName, 'NOT_STARTED'>;
  /** Why the loop ended by itself (its ELECTOR_STOPPED event); null while
   *  it runs and when close() ended it. */
  readonly error: KrabkaError | null;
  /** Never blocks. Unhealthy while the held lease is at risk, while a term
   *  is suspended and after the loop ended; the reason is for people,
   *  state() is the code. Throws KrabkaError CLOSED after close. */
  healthy(): { readonly healthy: boolean; readonly reason: string | null };
  /** Resigns a held term (its stop is delivered before this resolves) and
   *  ends the iteration. Idempotent. */
  close(): Promise<void>;
  on(event: 'started', listener: (term: Term) => void): this;
  on(event: 'atRisk' | 'suspended' | 'recovered', listener: (term: Term, deadline: bigint) => void): this;
  on(event: 'stopped', listener: (term: Term, stop: TermStop) => void): this;
  on(event: 'leader', listener: (leader: LeaderNotice) => void): this;
  on(event: 'ended', listener: (error: KrabkaError | null) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'started', listener: (term: Term) => void): this;
  once(event: 'atRisk' | 'suspended' | 'recovered', listener: (term: Term, deadline: bigint) => void): this;
  once(event: 'stopped', listener: (term: Term, stop: TermStop) => void): this;
  once(event: 'leader', listener: (leader: LeaderNotice) => void): this;
  once(event: 'ended', listener: (error: KrabkaError | null) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  [Symbol.asyncIterator](): Elector;
  [Symbol.asyncDispose](): Promise<void>;
}

export class Client extends EventEmitter {
  /** Throws TypeError/RangeError for bad value types, KrabkaError
   *  (UNKNOWN_CONFIG, INVALID_CONFIG) for unknown keys or bad values. */
  constructor(config?: Config);
  readonly closed: boolean;
  on(event: 'log', listener: (line: LogLine) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  /** Counters and gauges (docs/STATISTICS.md). Never blocks. */
  stats(): Stats;
  /** Watches a role without taking part; each next() waits on the event queue. */
  watch(role: Name, options?: CallOptions & { renewals?: boolean }): Promise<Watch>;
  /** Waits on the library's threads (completed through the event queue);
   *  keeps the process alive while pending, until options.signal aborts. */
  acquire(role: Name, member: Name, options?: AcquireOptions): Promise<Leadership>;
  tryAcquire(role: Name, member: Name, options?: AcquireOptions): Promise<TryAcquireResult>;
  /** Removes member's registration of role; a later acquire registers it
   *  again at the tail. Does not end a leadership. */
  leave(role: Name, member: Name, options?: CallOptions): Promise<void>;
  describe(role: Name, options?: CallOptions): Promise<Status>;
  /** Runs the election loop of member for role (campaign, renew, stop
   *  before the lease runs out, campaign again). Never waits on the
   *  cluster; throws TypeError/RangeError/KrabkaError for bad arguments. */
  elect(role: Name, member: Name, options?: ElectOptions | null): Elector;
  /** Joins member to the role group `group` of `shards` shards (1 to
   *  GROUP_MAX_SHARDS): the shards are spread over the members by weight,
   *  each held under its own token. Never waits on the cluster; throws
   *  TypeError/RangeError naming an argument of the wrong type, KrabkaError
   *  for what the library refuses (INVALID_ARG: a count out of range, a
   *  weight below 1; ROLE_TOO_LONG). */
  /** One election loop of member per role over many roles
   *  (docs/MANY-ROLES.md): add roles with add(), read every role's events
   *  from the one set. Never waits on the cluster. */
  electorSet(member: Name, options?: ElectorSetOptions | null): ElectorSet;
  joinGroup(group: Name, shards: number, member: Name, options?: GroupOptions | null): GroupMember;
  /** Joins member to the semaphore `name` of `slots` slots: each member
   *  holds at most one slot, under its own token. As joinGroup. */
  joinSemaphore(name: Name, slots: number, member: Name, options?: GroupOptions | null): GroupMember;
  /** Idempotent: returns the same Promise every time. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export class Leadership {
  private constructor();
  readonly role: string;
  readonly member: string;
  /** The minted token, or the one an own epoch recovery continued the
   *  leadership under (the next lease carries it); a timeout never changes it. */
  readonly token: FencingToken;
  readonly lease: Lease;
  /** The term's metadata as last written, or null. Never blocks. */
  readonly metadata: Buffer | null;
  readonly state: LeadershipState;
  /** state === 'ACTIVE' */
  readonly active: boolean;
  /** Resolves when the leadership is no longer active; never rejects.
   *  Keeps the process alive only once the leadership ended (after its
   *  resign, close or a refused write, or the client's close), until it
   *  resolves; not while the leadership is active. */
  readonly ended: Promise<LeadershipEnd>;
  renewDue(): boolean;
  /** Rejects with FencedError or LeaseExpiredError when the leadership ended. */
  renew(options?: CallOptions): Promise<void>;
  /** One DescribeTransactions: true while this leadership's token is the
   *  coordinator's current one for the role, false once another member (or
   *  a fence) minted a newer epoch (false ends nothing). Rejects with the
   *  error the leadership ended with once it ended. */
  confirm(options?: CallOptions): Promise<boolean>;
  /** Changes the term's metadata (null: none): a renewal carrying it.
   *  Rejects as renew; over MAX_METADATA_BYTES with INVALID_ARG. */
  setMetadata(data: Buffer | Uint8Array | null, options?: CallOptions): Promise<void>;
  /** The guarded write; rejects with FencedError once superseded. */
  produce(topic: string, value: Buffer | Uint8Array | string | null, options?: ProduceOptions): Promise<ProduceResult>;
  produceBatch(messages: Message[], options?: BatchOptions | null): Promise<ProduceResult[]>;
  /** Starts reading topics read_committed from the role's committed
   *  offsets (docs/PIPELINES.md). */
  consume(topics: string[], options?: CallOptions | null): Promise<Input>;
  resign(options?: ResignOptions): Promise<void>;
  /** Releases it without resigning. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Verifier.judge's verdicts: 'OK' | 'STALE' | 'MISMATCH' | 'UNSTAMPED' (krabka_verdict_t). */
export type Verdict = VerdictName;

/** Judges consumed guarded writes (docs/PROTOCOL.md 11.5): the highest token
 *  seen per scope, and the krabka.token header against the batch's token. */
export class Verifier {
  constructor();
  /** header: the krabka.token value (null/undefined: none); batchToken: the
   *  record batch's producer id and epoch. Throws KrabkaError
   *  INVALID_HANDLE once closed. */
  judge(
    scope: Name,
    header: Buffer | Uint8Array | string | null | undefined,
    batchToken: FencingToken | { producerId: bigint | number; producerEpoch: number },
  ): Verdict;
  /** The highest token seen for scope, or null. */
  highest(scope: Name): FencingToken | null;
  readonly closed: boolean;
  /** Idempotent; never blocks. */
  close(): void;
  [Symbol.dispose](): void;
}

/** Most bytes of metadata of a term or a member (4096). */
export const MAX_METADATA_BYTES: number;
/** The largest shard (or slot) count of a group (KRABKA_GROUP_MAX_SHARDS, 4096). */
export const GROUP_MAX_SHARDS: number;

/** The krabka_err_t numbers (they never change). */
export const ErrorCode: ErrorCodeMap;

export class KrabkaError extends Error {
  /** krabka_err_t number (stable). */
  readonly code: number;
  /** Symbolic name without the prefix: "FENCED", "TIMEOUT" (the library's
   *  name for a code this binding was generated without; "UNKNOWN" for a
   *  code no table knows). */
  readonly codeName: ErrorCodeName | (string & {});
  /** The library's description of the code. */
  readonly description: string;
  /** The reason text the library gave (also the message). */
  readonly reason: string;
  /** The same call may succeed later. */
  readonly retriable: boolean;
  /** The object the call was made on can no longer be used for that purpose. */
  readonly fatal: boolean;
  /** Conformance vocabulary word for data errors ('truncated', ...), else null. */
  readonly category: DataCategory | null;
}
export class FencedError extends KrabkaError {}
export class LeaseExpiredError extends KrabkaError {}
export class DecodeError extends KrabkaError {
  readonly category: DataCategory;
}

export const Kind: KindMap;

export interface Key {
  kind: 0 | 1;
  role: string;
  /** '' for a lease key */
  member: string;
}
export interface KeyInput {
  /** A krabka_kind_t number or its name (any letter case). */
  kind: 0 | 1 | 'REGISTRATION' | 'LEASE' | 'registration' | 'lease';
  role: Name;
  member?: Name | null;
}
export interface Registration {
  member: string;
  registeredAt: bigint;
}
export interface RegistrationInput {
  member: Name;
  registeredAt: bigint | number;
}
export interface LeaseInput {
  member: Name;
  token: FencingToken | { producerId: bigint | number; producerEpoch: number };
  grantedAt: bigint | number;
  deadline: bigint | number;
}

/** Throws DecodeError ('empty_role', 'role_too_long', 'invalid_utf8'); returns the bytes. */
export function validateRole(role: Name): Uint8Array;
/** Throws DecodeError ('empty_member', 'member_too_long', 'invalid_utf8'); returns the bytes. */
export function validateMember(member: Name): Uint8Array;
export function murmur2(data: Uint8Array | string): number;
export function rolePartition(role: Name, partitions: number): number;
export function isTombstone(value: Uint8Array | null | undefined): boolean;
export function encodeKey(key: KeyInput): Buffer;
export function decodeKey(data: Uint8Array): Key;
export function encodeRegistration(value: RegistrationInput): Buffer;
export function decodeRegistration(data: Uint8Array): Registration;
export function encodeLease(value: LeaseInput): Buffer;
export function decodeLease(data: Uint8Array): Lease;
export function parseToken(text: string | Uint8Array): FencingToken;
export function formatToken(token: FencingToken): string;

/** Version of the loaded library, e.g. "2.0.0". */
export function version(): string;
/** Path of the loaded libkrabka_coord.so. */
export function libraryPath(): string;
/** The ABI version this binding needs (KRABKA_ABI_VERSION: 2). */
export const ABI_VERSION: number;
/** krabka-coord calls in flight: submitted to the library's event queue and
 *  not completed yet (a Leadership.ended waiter is not a call), and closes
 *  running on the libuv pool. */
export function pendingCalls(): number;
