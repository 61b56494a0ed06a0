# The mixed-language group example (examples/group): a C, a Python and a
# Node member in one group.
#   make group-example        build/examples/group_member (the C member)
#   make group-example-test   the three members in one group on $KRABKA_BOOTSTRAP and
#                             $KRABKA_BOOTSTRAP_TV1 at once (examples/group/check.py):
#                             balanced 4/4/4, the Node member leaves and only its shards
#                             move, every shard written under its own token
PYTHON ?= python3
GO ?= go

.PHONY: group-example group-example-test
examples: group-example

build/examples/group_member: examples/group/member.c include/krabka_coord.h | lib
	@mkdir -p build/examples
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic -O2 -Ibuild/include \
		$< -o $@ -Lbuild -lkrabka_coord -Wl,-rpath,'$$ORIGIN/..'

group-example: build/examples/group_member

build/tests/group-example/ktopic build/tests/group-example/kread: go.mod go.sum
	@mkdir -p build/tests/group-example
	$(GO) build -o build/tests/group-example/ ./tests/kafka/cmd/ktopic ./tests/kafka/cmd/kread

group-example-test: lib node-deps build/examples/group_member build/tests/group-example/ktopic build/tests/group-example/kread
	$(call need_env,group-example-test,KRABKA_BOOTSTRAP)
	$(call need_env,group-example-test,KRABKA_BOOTSTRAP_TV1)
	@d=build/tests/group-example; run() { KRABKA_COORD_LIBRARY=$(CURDIR)/build/libkrabka_coord.so \
		$(PYTHON) examples/group/check.py "$$1" $(CURDIR)/build/examples/group_member $$d/ktopic $$d/kread; }; \
	run "$$KRABKA_BOOTSTRAP" > $$d/tv2.log 2>&1 & tv2=$$!; \
	run "$$KRABKA_BOOTSTRAP_TV1" > $$d/tv1.log 2>&1; tv1=$$?; wait $$tv2; tv2=$$?; \
	grep -h '^check\|^group example' $$d/tv2.log | sed 's/^/tv2: /'; grep -h '^check\|^group example' $$d/tv1.log | sed 's/^/tv1: /'; \
	test $$tv2 = 0 && test $$tv1 = 0
