#!/bin/bash
# goroutine-pkgs.sh PKG...: sorts the given package directories (./x) by
# whether their tests may run two goroutines at once, one line each:
# "race ./x" if its tests start a goroutine (a `go` statement) or call
# t.Parallel, or its code or a package of this module that its tests import
# starts one (other packages' tests do not run in its test binary);
# "single ./x" otherwise: single-goroutine code (simulations on a virtual
# clock, decoders), where the race detector has nothing to find and only
# slows the tests (make test runs those without it).
set -euo pipefail
go=${GO:-go}
pattern='(^|[[:space:];{])go (func|[A-Za-z_][A-Za-z0-9_.]*\()'
# The module's packages whose code (tests excluded) starts goroutines.
spawners=$($go list -f '{{.ImportPath}} {{.Dir}} {{join .GoFiles " "}}' ./... | while read -r path dir files; do
	if [[ -n $files ]] && (cd "$dir" && grep -qE "$pattern" $files); then
		echo "$path"
	fi
done)
# Every package of a directory (the one under test, its test packages and
# test main) with its dependencies; a dependency recompiled for the tests
# is named "path [p.test]".
$go list -test -f '{{.Dir}}|{{.ImportPath}}|{{join .Deps ","}}' "$@" |
	awk -F'|' -v spawners="$spawners" -v pwd="$PWD" -v pattern="$pattern" '
	BEGIN { n = split(spawners, s, "\n"); for (i = 1; i <= n; i++) spawn[s[i]] = 1 }
	{
		dir = "." substr($1, length(pwd) + 1)
		if (!(dir in race)) { race[dir] = 0; order[++dirs] = dir }
		p = $2; sub(/ \[.*/, "", p)
		if (spawn[p]) race[dir] = 1
		m = split($3, deps, ",")
		for (i = 1; i <= m; i++) { d = deps[i]; sub(/ \[.*/, "", d); if (spawn[d]) race[dir] = 1 }
	}
	END {
		for (i = 1; i <= dirs; i++) {
			dir = order[i]
			# Its own tests start goroutines or run in parallel.
			cmd = "cat " dir "/*_test.go 2>/dev/null | grep -qE \"" pattern "|\\\\.Parallel\\\\(\\\\)|RunParallel\\\\(\""
			if (!race[dir] && system(cmd) == 0) race[dir] = 1
			print (race[dir] ? "race " : "single ") dir
		}
	}'
