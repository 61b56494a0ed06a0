'use strict';
// Finding and loading libkrabka_coord.so. Every constant, enum, struct and
// function declaration comes from lib/abi.js, which internal/gen writes from
// include/krabka_coord.h (`go generate ./...`); nothing of the C ABI is
// spelled out here. No coordination rule lives in this binding (they are
// all in the Go core behind the C API).

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');
const abi = require('./abi');

/** The ABI this binding was generated for (KRABKA_ABI_VERSION). */
const ABI_VERSION = abi.CONSTANTS.ABI_VERSION;
const LIBRARY_FILE = 'libkrabka_coord.so';
/** Size of the errstr buffers the binding passes (the reasons are short). */
const ERRSTR_SIZE = 512;

// ---- Finding the library -------------------------------------------------
// Release builds ship the library in one npm package per platform (see
// packaging/dist.sh in the repository), installed as an optional dependency
// of krabka-coord; npm installs the one whose os/cpu/libc match.
const SYSTEM_SONAME = `${LIBRARY_FILE}.${ABI_VERSION}`;
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
 * finally the system loader's search for libkrabka_coord.so.<ABI> (ldconfig,
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
function loadFailure(code, message, tried, extra = {}) {
  const e = new Error(message);
  e.code = code;
  e.tried = tried;
  Object.assign(e, extra);
  return e;
}

// Errors that name the library found as unusable: no other candidate is tried.
const DEFINITIVE = new Set(['KRABKA_LIBRARY_ABI_MISMATCH', 'KRABKA_LIBRARY_INVALID', 'KRABKA_LIBRARY_INCOMPLETE']);

let loaded = null;
let loadError = null;

function loadFrom(file) {
  const probe = koffi.load(file);
  let version;
  try {
    version = probe.func('int krabka_abi_version(void)')();
  } catch (e) {
    throw loadFailure('KRABKA_LIBRARY_INVALID', `krabka-coord: ${file} is not libkrabka_coord (no krabka_abi_version): ${e.message}`, [file]);
  }
  if (version !== ABI_VERSION) {
    throw loadFailure(
      'KRABKA_LIBRARY_ABI_MISMATCH',
      `krabka-coord: ${file} has ABI version ${version}, this binding needs ABI version ${ABI_VERSION}; ` +
        `install a matching ${SYSTEM_SONAME} or a matching krabka-coord package`,
      [file],
    );
  }
  let api;
  try {
    api = abi.load(koffi, file); // every function of the header, or KRABKA_LIBRARY_INCOMPLETE
  } catch (e) {
    if (e.code === 'KRABKA_LIBRARY_INCOMPLETE') throw loadFailure(e.code, e.message, [file], { missing: e.missing });
    throw e;
  }
  // fns is a plain object of its own (the generated one is frozen): a test
  // may replace a function to prove the binding never calls it.
  return { lib: api.lib, fns: { ...api.fns }, types: api.types, constants: api.constants, file };
}

/**
 * Loads libkrabka_coord.so (once) and returns { fns, types, constants, file }
 * (fns: every function of the header by name; types: its koffi types);
 * see candidatePaths() for where it looks. Throws an Error whose `code` is
 * KRABKA_LIBRARY_NOT_FOUND (nothing loaded; `tried` lists every path and why
 * it failed), KRABKA_LIBRARY_ABI_MISMATCH, KRABKA_LIBRARY_INVALID or
 * KRABKA_LIBRARY_INCOMPLETE (`missing`: the functions it lacks).
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
      if (DEFINITIVE.has(e.code)) {
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

module.exports = {
  koffi,
  native,
  libraryPath,
  platformPackage,
  candidatePaths,
  ABI_VERSION,
  SYSTEM_SONAME,
  CONSTANTS: abi.CONSTANTS,
  ERRSTR_SIZE,
};
