# Release artifacts (packaging/, docs/PLATFORMS.md). The debug build (`make lib`)
# stays the default for development; these targets build release libraries.
#   make dist          every target (x86_64, aarch64, armv7 hard-float on glibc >= 2.28):
#                      library tarballs with the static archive,
#                      header, pkg-config file, docs/PROTOCOL.md and docs/ABI.md, one wheel per target, the sdist, the npm
#                      package and one npm package per target, into dist/ with SHA256SUMS.
#                      DIST_TARGETS="x86_64-linux-gnu ..." limits the targets.
#   make dist-test     installs each x86_64 artifact into a fresh prefix, venv and npm
#                      folder and runs a smoke test that takes a role on a broker
#                      ($KRABKA_BOOTSTRAP, else one it starts), checks that a second
#                      build gives the same bytes, then the qemu checks (dist-qemu-test).
#   make dist-qemu-test  the C conformance, misuse, live and smoke tests for the aarch64
#                      and armv7 libraries under qemu user-mode emulation, on a broker
#                      on 127.0.0.1.
#   make dist-short-test  what `make test` runs: x86_64 glibc only, no sdist build from
#                      source and no qemu (the full form is dist + dist-test).
# The tools (zig cc from PyPI's ziglang, auditwheel, qemu-user, cross C libraries) are
# installed on demand by packaging/toolchain.sh.


.PHONY: dist dist-test dist-qemu-test dist-short-test dist-clean
dist:
	packaging/dist.sh

dist-test:
	packaging/dist-test.sh

dist-qemu-test:
	packaging/qemu-test.sh

dist-short-test:
	DIST_TARGETS=x86_64-linux-gnu packaging/dist.sh
	DIST_TEST_SHORT=1 packaging/dist-test.sh

dist-clean:
	rm -rf dist build/release build/dist-stage
