'use strict';
// The one place that knows about koffi and the C ABI of libkrabka_coord.so.
// Everything here mirrors include/krabka_coord.h; no coordination rule lives
// in this binding (they are all in the Go core behind the C API).

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');

/** The ABI this binding was written against (KRABKA_ABI_VERSION). */
const ABI_VERSION = 1;
const LIBRARY_FILE = 'libkrabka_coord.so';
const NAME_BUF = 256; // KRABKA_NAME_BUF
const NAME_MAX = 249; // KRABKA_NAME_MAX
const TOKEN_TEXT_MAX = 32; // KRABKA_TOKEN_TEXT_MAX
const ERRSTR_SIZE = 512;
const MAX_METADATA_BYTES = 4096; // KRABKA_MAX_METADATA_BYTES

// Value types. Fixed name arrays come back as Uint8Array: names may hold any
// byte (NUL included) and their length is the *_len field, not a terminator.
const T = {};
T.token = koffi.struct('krabka_token_t', {
  producer_id: 'int64_t',
  producer_epoch: 'int16_t',
});
const nameArray = () => koffi.array('uint8_t', NAME_BUF, 'Typed');
T.key = koffi.struct('krabka_key_t', {
  kind: 'int32_t',
  role_len: 'uint32_t',
  role: nameArray(),
  member_len: 'uint32_t',
  member: nameArray(),
});
T.registration = koffi.struct('krabka_registration_t', {
  member_len: 'uint32_t',
  member: nameArray(),
  registered_at: 'int64_t',
});
T.lease = koffi.struct('krabka_lease_t', {
  member_len: 'uint32_t',
  member: nameArray(),
  token: T.token,
  granted_at: 'int64_t',
  deadline: 'int64_t',
});
T.message = koffi.struct('krabka_message_t', {
  topic: 'const char *',
  partition: 'int32_t',
  key: 'void *',
  key_len: 'size_t',
  value: 'void *',
  value_len: 'size_t',
});
T.header = koffi.struct('krabka_header_t', {
  key: 'const char *',
  value: 'void *',
  value_len: 'size_t',
});
T.produceResult = koffi.struct('krabka_produce_result_t', {
  partition: 'int32_t',
  offset: 'int64_t',
});
T.rosterEntry = koffi.struct('krabka_roster_entry_t', {
  member_len: 'uint32_t',
  member: nameArray(),
  offset: 'int64_t',
  registered_at: 'int64_t',
  rank: 'int32_t',
});
koffi.pointer('krabka_conf_t', koffi.opaque('krabka_conf'));
koffi.pointer('krabka_client_t', koffi.opaque('krabka_client'));
koffi.pointer('krabka_leadership_t', koffi.opaque('krabka_leadership'));
koffi.pointer('krabka_status_t', koffi.opaque('krabka_status'));
koffi.pointer('krabka_queue_t', koffi.opaque('krabka_queue'));
koffi.pointer('krabka_watch_t', koffi.opaque('krabka_watch'));
koffi.pointer('krabka_verifier_t', koffi.opaque('krabka_verifier'));
T.watchEvent = koffi.struct('krabka_watch_event_t', {
  kind: 'int',
  role_len: 'uint32_t',
  role: nameArray(),
  has_holder: 'int',
  holder_len: 'uint32_t',
  holder: nameArray(),
  token: T.token,
  has_prev_holder: 'int',
  prev_holder_len: 'uint32_t',
  prev_holder: nameArray(),
  prev_token: T.token,
  has_lease: 'int',
  lease: T.lease,
  roster_count: 'size_t',
  roster: 'void *',
  offset: 'int64_t',
  at_ms: 'int64_t',
});
T.event = koffi.struct('krabka_event_t', {
  type: 'int',
  tag: 'uint64_t',
  err: 'int',
  errstr: 'const char *',
  leadership: 'krabka_leadership_t',
  state: 'int',
  log_level: 'int',
  log_line: 'const char *',
  watch_event: 'void *',
});

// Declarations, in header order. Names and byte strings are passed as
// (const uint8_t *, size_t) so a Buffer goes straight through; errstr is a
// caller-owned Buffer.
const DECLS = [
  'const char *krabka_version(void)',
  'int krabka_version_number(void)',
  'int krabka_abi_version(void)',
  'const char *krabka_err2str(int err)',
  'const char *krabka_err2name(int err)',
  'int krabka_err_is_retriable(int err)',
  'int krabka_err_is_fatal(int err)',

  'krabka_token_t krabka_token_no_epoch(void)',
  'int krabka_token_validate(krabka_token_t token, uint8_t *errstr, size_t errstr_size)',
  'int krabka_token_compare(krabka_token_t a, krabka_token_t b)',
  'int krabka_token_supersedes(krabka_token_t a, krabka_token_t b)',
  'int krabka_token_format(krabka_token_t token, uint8_t *buf, size_t buf_size)',
  'int krabka_token_parse(const uint8_t *text, size_t text_len, _Out_ krabka_token_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_role_validate(const uint8_t *role, size_t role_len, uint8_t *errstr, size_t errstr_size)',
  'int krabka_member_validate(const uint8_t *member, size_t member_len, uint8_t *errstr, size_t errstr_size)',
  'int32_t krabka_murmur2(const uint8_t *data, size_t len)',
  'int krabka_role_partition(const uint8_t *role, size_t role_len, int32_t partitions, int32_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_value_is_tombstone(const uint8_t *value, size_t len)',
  'int krabka_key_encode(const krabka_key_t *key, uint8_t *buf, size_t buf_size, size_t *out_len, uint8_t *errstr, size_t errstr_size)',
  'int krabka_key_decode(const uint8_t *data, size_t len, _Out_ krabka_key_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_registration_encode(const krabka_registration_t *value, uint8_t *buf, size_t buf_size, size_t *out_len, uint8_t *errstr, size_t errstr_size)',
  'int krabka_registration_decode(const uint8_t *data, size_t len, _Out_ krabka_registration_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_lease_encode(const krabka_lease_t *value, uint8_t *buf, size_t buf_size, size_t *out_len, uint8_t *errstr, size_t errstr_size)',
  'int krabka_lease_decode(const uint8_t *data, size_t len, _Out_ krabka_lease_t *out, uint8_t *errstr, size_t errstr_size)',

  'krabka_conf_t krabka_conf_new(void)',
  'int krabka_conf_set(krabka_conf_t conf, const char *name, const char *value, uint8_t *errstr, size_t errstr_size)',
  'int krabka_conf_get(krabka_conf_t conf, const char *name, uint8_t *value, _Inout_ size_t *value_size)',
  'int krabka_conf_destroy(krabka_conf_t conf)',

  'int krabka_client_new(krabka_conf_t conf, _Out_ krabka_client_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_client_destroy(krabka_client_t client)',
  'int krabka_client_acquire(krabka_client_t client, const uint8_t *role, size_t role_len, const uint8_t *member, size_t member_len, int64_t timeout_ms, _Out_ krabka_leadership_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_client_try_acquire(krabka_client_t client, const uint8_t *role, size_t role_len, const uint8_t *member, size_t member_len, int64_t timeout_ms, _Out_ krabka_leadership_t *out, _Out_ int64_t *retry_at_ms, uint8_t *errstr, size_t errstr_size)',
  'int krabka_client_describe(krabka_client_t client, const uint8_t *role, size_t role_len, int64_t timeout_ms, _Out_ krabka_status_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_client_leave(krabka_client_t client, const uint8_t *role, size_t role_len, const uint8_t *member, size_t member_len, int64_t timeout_ms, uint8_t *errstr, size_t errstr_size)',

  'int krabka_leadership_token(krabka_leadership_t leadership, _Out_ krabka_token_t *out)',
  'int krabka_leadership_lease(krabka_leadership_t leadership, _Out_ krabka_lease_t *out)',
  'int krabka_leadership_state(krabka_leadership_t leadership, _Out_ int *out)',
  'int krabka_leadership_renew_due(krabka_leadership_t leadership, _Out_ int *due)',
  'int krabka_leadership_renew(krabka_leadership_t leadership, int64_t timeout_ms, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_produce(krabka_leadership_t leadership, const krabka_message_t *messages, size_t count, int64_t timeout_ms, uint8_t *results, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_resign(krabka_leadership_t leadership, int64_t timeout_ms, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_destroy(krabka_leadership_t leadership)',

  'int krabka_status_holder(krabka_status_t status, _Out_ int *has_holder, uint8_t *buf, size_t buf_size, _Out_ size_t *len)',
  'int krabka_status_token(krabka_status_t status, _Out_ krabka_token_t *out)',
  'int krabka_status_current(krabka_status_t status, _Out_ int *current)',
  'int krabka_status_lease(krabka_status_t status, _Out_ int *has_lease, _Out_ krabka_lease_t *out)',
  'int krabka_status_partition(krabka_status_t status, _Out_ int32_t *out)',
  'int krabka_status_skipped(krabka_status_t status, _Out_ int64_t *out)',
  'int krabka_status_removed(krabka_status_t status, _Out_ int64_t *out)',
  'int krabka_status_roster_count(krabka_status_t status, _Out_ size_t *count)',
  'int krabka_status_roster_entry(krabka_status_t status, size_t index, _Out_ krabka_roster_entry_t *out)',
  'int krabka_status_destroy(krabka_status_t status)',

  'int krabka_leadership_wait(krabka_leadership_t leadership, int64_t timeout_ms, _Out_ int *state)',
  'int krabka_leadership_event_fd(krabka_leadership_t leadership, _Out_ int *fd)',
  'int krabka_leadership_end_error(krabka_leadership_t leadership, _Out_ int *code, uint8_t *reason, size_t reason_size)',
  'int krabka_leadership_ended_async(krabka_leadership_t leadership, krabka_queue_t queue, uint64_t tag)',
  'int krabka_queue_new(_Out_ krabka_queue_t *out)',
  'int krabka_queue_fd(krabka_queue_t queue, _Out_ int *fd)',
  'int krabka_queue_poll(krabka_queue_t queue, _Out_ krabka_event_t *out)',
  'int krabka_queue_destroy(krabka_queue_t queue)',
  'int krabka_client_acquire_async(krabka_client_t client, const uint8_t *role, size_t role_len, const uint8_t *member, size_t member_len, int64_t timeout_ms, krabka_queue_t queue, uint64_t tag, uint8_t *errstr, size_t errstr_size)',
  'int krabka_conf_set_log_queue(krabka_conf_t conf, krabka_queue_t queue, uint64_t tag)',
  'int krabka_client_stats_json(krabka_client_t client, _Out_ void **json, _Out_ size_t *len)',
  'void krabka_free(void *ptr)',
  'int krabka_client_watch(krabka_client_t client, const uint8_t *role, size_t role_len, int flags, int64_t timeout_ms, _Out_ krabka_watch_t *out, uint8_t *errstr, size_t errstr_size)',
  'int krabka_watch_event_fd(krabka_watch_t watch, _Out_ int *fd)',
  'int krabka_watch_next_async(krabka_watch_t watch, int64_t timeout_ms, krabka_queue_t queue, uint64_t tag)',
  'int krabka_watch_destroy(krabka_watch_t watch)',

  // Record headers (ABI 1.1): metadata, named successor, headers, verifier.
  'int krabka_client_set_metadata(krabka_client_t client, const uint8_t *role, size_t role_len, const uint8_t *member, size_t member_len, const uint8_t *term_meta, size_t term_meta_len, const uint8_t *member_meta, size_t member_meta_len, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_set_metadata(krabka_leadership_t leadership, const uint8_t *data, size_t len, int64_t timeout_ms, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_metadata(krabka_leadership_t leadership, uint8_t *buf, size_t buf_size, _Out_ size_t *len)',
  'int krabka_leadership_resign_to(krabka_leadership_t leadership, const uint8_t *successor, size_t successor_len, int64_t timeout_ms, uint8_t *errstr, size_t errstr_size)',
  'int krabka_leadership_produce_with_headers(krabka_leadership_t leadership, const krabka_message_t *messages, size_t count, const krabka_header_t *headers, const size_t *header_counts, int64_t timeout_ms, uint8_t *results, uint8_t *errstr, size_t errstr_size)',
  'int krabka_status_metadata(krabka_status_t status, uint8_t *buf, size_t buf_size, _Out_ size_t *len)',
  'int krabka_status_roster_metadata(krabka_status_t status, size_t index, uint8_t *buf, size_t buf_size, _Out_ size_t *len)',
  'int krabka_watch_metadata(krabka_watch_t watch, uint8_t *buf, size_t buf_size, _Out_ size_t *len)',
  'int krabka_verifier_new(_Out_ krabka_verifier_t *out)',
  'int krabka_verifier_judge(krabka_verifier_t verifier, const uint8_t *scope, size_t scope_len, const uint8_t *header, size_t header_len, krabka_token_t batch, _Out_ int *out)',
  'int krabka_verifier_highest(krabka_verifier_t verifier, const uint8_t *scope, size_t scope_len, _Out_ int *has, _Out_ krabka_token_t *out)',
  'int krabka_verifier_destroy(krabka_verifier_t verifier)',
];

// ---- Finding the library -------------------------------------------------
// Release builds ship the library in one npm package per platform (see
// packaging/npm in the repository), installed as an optional dependency of
// krabka-coord; npm installs the one whose os/cpu/libc match.
const SYSTEM_SONAME = 'libkrabka_coord.so.2';
const PLATFORM_PACKAGES = {
  'linux-x64-glibc': '@krabka/coord-linux-x64-gnu',
  'linux-arm64-glibc': '@krabka/coord-linux-arm64-gnu',
  'linux-arm-glibc': '@krabka/coord-linux-arm-gnueabihf',
};

/** 'glibc' or 'musl' on Linux (null elsewhere). */
function libcFamily() {
  if (process.platform !== 'linux') return null;
  try {
    const header = process.report.getReport().header;
    if (header.glibcVersionRuntime) return 'glibc';
  } catch {
    // process.report unavailable: decide by the dynamic loader below
  }
  const musl = fs.existsSync('/lib') && fs.readdirSync('/lib').some((f) => f.startsWith('ld-musl-'));
  return musl ? 'musl' : 'glibc';
}

/** The platform package's name for this process, or null if none is built for it. */
function platformPackage() {
  return PLATFORM_PACKAGES[`${process.platform}-${process.arch}-${libcFamily()}`] || null;
}

/**
 * Where the library is looked for, in order: KRABKA_COORD_LIBRARY alone when
 * set (an explicit choice; a bare name uses the dlopen search); otherwise the
 * platform package, the package folder, the repository's build/ folder and
 * finally the system loader's search for libkrabka_coord.so.2 (ldconfig,
 * LD_LIBRARY_PATH). `search: true` marks a bare name for the dlopen search.
 */
function candidatePaths() {
  const env = process.env.KRABKA_COORD_LIBRARY;
  if (env) {
    return env.includes('/') ? [{ file: path.resolve(env), search: false }] : [{ file: env, search: true }];
  }
  const out = [];
  const pkgName = platformPackage();
  if (pkgName) {
    try {
      const dir = path.dirname(require.resolve(`${pkgName}/package.json`));
      out.push({ file: path.join(dir, LIBRARY_FILE), search: false });
    } catch {
      out.push({ file: `${pkgName}/${LIBRARY_FILE}`, search: false, missing: `package ${pkgName} is not installed` });
    }
  }
  const pkg = path.resolve(__dirname, '..');
  out.push({ file: path.join(pkg, LIBRARY_FILE), search: false });
  // A checkout of the repository: bindings/node -> ../../build (./build.sh).
  const repo = path.resolve(pkg, '..', '..');
  if (fs.existsSync(path.join(repo, 'go.mod'))) out.push({ file: path.join(repo, 'build', LIBRARY_FILE), search: false });
  out.push({ file: SYSTEM_SONAME, search: true });
  return out;
}

/** An Error with a stable `code` and the list of paths tried. */
function loadFailure(code, message, tried) {
  const e = new Error(message);
  e.code = code;
  e.tried = tried;
  return e;
}

let loaded = null;
let loadError = null;

function loadFrom(file) {
  const lib = koffi.load(file);
  let abi;
  try {
    abi = lib.func('int krabka_abi_version(void)')();
  } catch (e) {
    throw loadFailure('KRABKA_LIBRARY_INVALID', `krabka-coord: ${file} is not libkrabka_coord (no krabka_abi_version): ${e.message}`, [file]);
  }
  if (abi !== ABI_VERSION) {
    throw loadFailure(
      'KRABKA_LIBRARY_ABI_MISMATCH',
      `krabka-coord: ${file} has ABI version ${abi}, this binding needs ABI version ${ABI_VERSION}; ` +
        'install a matching libkrabka_coord.so or a matching krabka-coord package',
      [file],
    );
  }
  const fns = {};
  for (const decl of DECLS) {
    const name = /\b(krabka_\w+)\(/.exec(decl)[1];
    try {
      fns[name] = lib.func(decl);
    } catch (e) {
      // An incomplete library (during development) still serves what it has;
      // calling a missing function fails with a clear error.
      const err = () => new Error(`krabka-coord: ${file} does not export ${name} (${e.message})`);
      const missing = () => {
        throw err();
      };
      missing.async = (...args) => args[args.length - 1](err());
      fns[name] = missing;
    }
  }
  return { lib, fns, file };
}

/**
 * Loads libkrabka_coord.so (once) and returns its functions; see
 * candidatePaths() for where it looks. Throws an Error whose `code` is
 * KRABKA_LIBRARY_NOT_FOUND (nothing loaded; `tried` lists every path and why
 * it failed), KRABKA_LIBRARY_ABI_MISMATCH or KRABKA_LIBRARY_INVALID.
 */
function native() {
  if (loaded) return loaded;
  if (loadError) throw loadError;
  const tried = [];
  for (const c of candidatePaths()) {
    if (c.missing) {
      tried.push(`${c.file} (${c.missing})`);
      continue;
    }
    if (!c.search && !fs.existsSync(c.file)) {
      tried.push(`${c.file} (not found)`);
      continue;
    }
    try {
      loaded = loadFrom(c.file);
      return loaded;
    } catch (e) {
      if (e.code === 'KRABKA_LIBRARY_ABI_MISMATCH' || e.code === 'KRABKA_LIBRARY_INVALID') {
        loadError = e;
        throw e;
      }
      tried.push(`${c.file} (${c.search ? 'system loader: ' : ''}${e.message})`);
    }
  }
  const pkgName = platformPackage();
  const hint = process.env.KRABKA_COORD_LIBRARY
    ? 'KRABKA_COORD_LIBRARY names the library to load: fix or unset it.'
    : pkgName
      ? `Install ${pkgName} (npm installs it with krabka-coord unless optional dependencies are omitted), ` +
        'set KRABKA_COORD_LIBRARY to a built libkrabka_coord.so, or install the library system-wide.'
      : `No prebuilt library exists for ${process.platform}-${process.arch}` +
        `${libcFamily() ? ` (${libcFamily()})` : ''}: build it with ./build.sh in the repository ` +
        'and set KRABKA_COORD_LIBRARY to its path.';
  loadError = loadFailure(
    'KRABKA_LIBRARY_NOT_FOUND',
    `krabka-coord: cannot load ${LIBRARY_FILE}; tried ${tried.join('; ')}. ${hint}`,
    tried,
  );
  throw loadError;
}

/** Path of the loaded library (loads it if needed). */
function libraryPath() {
  return native().file;
}

module.exports = { koffi, native, libraryPath, platformPackage, candidatePaths, T, ABI_VERSION, NAME_BUF, NAME_MAX, TOKEN_TEXT_MAX, ERRSTR_SIZE, MAX_METADATA_BYTES };
