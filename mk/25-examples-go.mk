# Go examples (examples/go): built by `make examples` into build/examples/go.
#   make go-examples   go vet, go test (on the in-process cluster: no broker) and go build
#                      of every program under examples/go
GO ?= go

.PHONY: go-examples
examples: go-examples

go-examples:
	$(GO) vet ./examples/go/...
	$(GO) test -count=1 ./examples/go/...
	@mkdir -p build/examples/go
	$(GO) build -o build/examples/go/ ./examples/go/...
