#!/bin/bash
# goroutine-pkgs.sh [--none] PKG...: of the given package directories (./x),
# prints those whose tests may run two goroutines at once: its tests start a
# goroutine (a `go` statement) or call t.Parallel, or its code or a package
# of this module that its tests import starts one (other packages' tests
# do not run in its test binary). With --none it prints the
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
# The module's packages whose code (tests excluded) starts goroutines.
pattern='(^|[[:space:];{])go (func|[A-Za-z_][A-Za-z0-9_.]*\()'
spawners=$(for d in $($go list -f '{{.Dir}}' ./...); do
	files=$(ls "$d"/*.go 2>/dev/null | grep -v '_test\.go$' || true)
	if [[ -n $files ]] && grep -qE "$pattern" $files; then
		$go list -f '{{.ImportPath}}' "$d"
	fi
done | sort -u)
for p in "$@"; do
	kind=-
	# Its own tests start goroutines or run in parallel.
	if grep -qE "$pattern|\.Parallel\(\)|RunParallel\(" "$p"/*_test.go 2>/dev/null; then
		kind=R
	fi
	# It, or a package of this module its tests import, starts them.
	deps=$($go list -test -deps -f '{{.ImportPath}}' "$p" | sed 's/ \[.*//' | grep "^$mod" | sort -u)
	if comm -12 <(echo "$spawners") <(echo "$deps") | grep -q .; then
		kind=R
	fi
	if [[ $kind == "$want" ]]; then
		echo "$p"
	fi
done
