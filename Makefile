GO ?= go

# Packages that link the Temporal server are too slow to build under the race
# detector, so they are tested without it. The lists come from go list, so
# packages are picked up as they appear.
SERVER_PKGS := /(workers/devserver|workers/bench|test)(/|$$)

.PHONY: build test lint

# ampflow and, beside it, the small hook Codex and Gemini CLI runners run
# before each tool call (docs/tools.md), where the worker looks for it.
build:
	$(GO) build -o bin/ampflow ./cmd/ampflow
	$(GO) build -trimpath -ldflags="-s -w" -o bin/ampflow-hook ./cmd/ampflow-hook

test:
	@set -e; \
	module="$$($(GO) list -m)"; \
	all="$$($(GO) list -f '{{.ImportPath}} {{if or .TestGoFiles .XTestGoFiles}}tests{{end}}' ./...)"; \
	race="$$(echo "$$all" | awk -v re="^$$module$(SERVER_PKGS)" '$$2 == "tests" && $$1 !~ re { print $$1 }')"; \
	server="$$(echo "$$all" | awk -v re="^$$module$(SERVER_PKGS)" '$$1 ~ re { print $$1 }')"; \
	if [ -n "$$race" ]; then echo "go test -race" $$race; $(GO) test -race $$race; fi; \
	if [ -n "$$server" ]; then echo "go test -timeout 40m" $$server; $(GO) test -timeout 40m $$server; fi

lint:
	$(GO) vet ./...
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
