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
  'int krabka_status_roster_count(krabka_status_t status, _Out_ size_t *count)',
  'int krabka_status_roster_entry(krabka_status_t status, size_t index, _Out_ krabka_roster_entry_t *out)',
  'int krabka_status_destroy(krabka_status_t status)',
];

/** Where the library is looked for, in order. */
function candidatePaths() {
  const env = process.env.KRABKA_COORD_LIBRARY;
  if (env) return { fromEnv: true, paths: [env.includes('/') ? path.resolve(env) : env] }; // a bare name: the dlopen search
  const pkg = path.resolve(__dirname, '..');
  return {
    fromEnv: false,
    paths: [path.join(pkg, LIBRARY_FILE), path.resolve(pkg, '..', '..', 'build', LIBRARY_FILE)],
  };
}

let loaded = null;
let loadError = null;

function loadFrom(file) {
  const lib = koffi.load(file);
  let abi;
  try {
    abi = lib.func('int krabka_abi_version(void)')();
  } catch (e) {
    throw new Error(`krabka-coord: ${file} is not libkrabka_coord (no krabka_abi_version): ${e.message}`);
  }
  if (abi !== ABI_VERSION) {
    throw new Error(
      `krabka-coord: ${file} has ABI version ${abi}, this binding needs ABI version ${ABI_VERSION}; ` +
        'install a matching libkrabka_coord.so or a matching krabka-coord package',
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
 * Loads libkrabka_coord.so (once) and returns its functions. Looks at
 * KRABKA_COORD_LIBRARY, then the package folder, then the repository's
 * build/ folder. Throws a clear Error when none loads or the ABI differs.
 */
function native() {
  if (loaded) return loaded;
  if (loadError) throw loadError;
  const { fromEnv, paths } = candidatePaths();
  const tried = [];
  for (const file of paths) {
    if (!fromEnv && !fs.existsSync(file)) {
      tried.push(`${file} (not found)`);
      continue;
    }
    try {
      loaded = loadFrom(file);
      return loaded;
    } catch (e) {
      if (/ABI version|not libkrabka_coord/.test(e.message)) {
        loadError = e;
        throw e;
      }
      tried.push(`${file} (${e.message})`);
    }
  }
  loadError = new Error(
    `krabka-coord: cannot load ${LIBRARY_FILE}; tried ${tried.join('; ')}. ` +
      'Build it with ./build.sh in the repository, or set KRABKA_COORD_LIBRARY to its path.',
  );
  throw loadError;
}

/** Path of the loaded library (loads it if needed). */
function libraryPath() {
  return native().file;
}

module.exports = { koffi, native, libraryPath, T, ABI_VERSION, NAME_BUF, NAME_MAX, TOKEN_TEXT_MAX, ERRSTR_SIZE };
