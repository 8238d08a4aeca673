#!/bin/bash
# goroutine-pkgs.sh [--none] PKG...: of the given package directories (./x),
# prints those whose tests may run two goroutines at once: the package, its
# tests, or a package of this module that they import starts a goroutine
# (a `go` statement) or a test calls t.Parallel. With --none it prints the
# others: single-goroutine code (simulations on a virtual clock, decoders),
# where the race detector has nothing to find and only slows the tests
# (make test runs those without it).
set -euo pipefail
want=R
if [[ ${1:-} == --none ]]; then
	want=-
	shift
fi
go=${GO:-go}
mod=$($go list -m)
# The module's packages that start goroutines or run tests in parallel.
spawners=$(for d in $($go list -f '{{.Dir}}' ./...); do
	if grep -qE '(^|[[:space:];{])go (func|[A-Za-z_][A-Za-z0-9_.]*\()|\.Parallel\(\)|RunParallel\(' "$d"/*.go 2>/dev/null; then
		$go list -f '{{.ImportPath}}' "$d"
	fi
done | sort -u)
for p in "$@"; do
	deps=$($go list -test -deps -f '{{.ImportPath}}' "$p" | sed 's/ \[.*//' | grep "^$mod" | sort -u)
	if comm -12 <(echo "$spawners") <(echo "$deps") | grep -q .; then
		kind=R
	else
		kind=-
	fi
	if [[ $kind == "$want" ]]; then
		echo "$p"
	fi
done
