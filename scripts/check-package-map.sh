#!/bin/bash
# check-package-map.sh: docs/architecture.md's package map ("The packages")
# must list every package of the module with its imports from the module as
# `go list` gives them (tests excluded), and no package but cmd/'s may
# depend on two mechanisms' trees. Prints each difference and the row
# to write; exits 1 if there is one. With --print, prints the imports column
# of every package instead.
set -euo pipefail
go=${GO:-go}
doc=${DOC:-docs/architecture.md}
mod=$($go list -m)
# imports[PKG]: the imports column for PKG ("none" if it has none), from one
# go list of the module.
declare -A imports
while IFS='|' read -r p col; do
	imports[$p]=$col
done < <($go list -f '{{.ImportPath}}|{{join .Imports ","}}' ./... | awk -F'|' -v mod="$mod" '
	$1 == mod { next }
	{
		p = substr($1, length(mod) + 2); n = split($2, imps, ","); k = 0
		delete own
		for (i = 1; i <= n; i++) if (index(imps[i], mod "/") == 1) own[++k] = substr(imps[i], length(mod) + 2)
		# sort own[1..k] (insertion sort: a handful each)
		for (i = 2; i <= k; i++) { v = own[i]; for (j = i - 1; j >= 1 && own[j] > v; j--) own[j + 1] = own[j]; own[j + 1] = v }
		col = ""
		for (i = 1; i <= k; i++) col = col (i > 1 ? ", " : "") "`" own[i] "`"
		print p "|" (k ? col : "none")
	}')
want() { echo "${imports[$1]}"; }
pkgs=$(printf '%s\n' "${!imports[@]}" | sort)
if [[ ${1:-} == --print ]]; then
	for p in $pkgs; do printf '%s: %s\n' "$p" "$(want "$p")"; done
	exit 0
fi
bad=0
declare -A rows
# Rows look like: | `pkg/` | job | imports |, or | `a/`, `b/` | job | `b`: `a` |
while IFS= read -r line; do
	first=$(cut -d'|' -f2 <<<"$line")
	last=$(awk -F'|' '{print $(NF-1)}' <<<"$line" | sed 's/^ *//; s/ *$//')
	for p in $(grep -o '`[^`]*/`' <<<"$first" | tr -d '`' | sed 's|/$||'); do
		rows[$p]=$last
	done
done < <(sed -n '/^## The packages/,/^## /p' "$doc" | grep '^| `')
for p in $pkgs; do
	if [[ -z ${rows[$p]+x} ]]; then
		echo "$doc: package $p is not in the map; its imports: $(want "$p")"
		bad=1
		continue
	fi
	got=${rows[$p]}
	w=$(want "$p")
	# A shared row (`a/`, `b/`) names each package's imports as `b`: `x`.
	if grep -q '`[^`]*`: ' <<<"$got"; then
		got=$(grep -o "\`$p\`: [^;|]*" <<<"$got" | sed "s|^\`$p\`: ||; s/ *$//" || true)
		got=${got:-none}
	fi
	[[ $got == "—" ]] && got=none
	if [[ $got != "$w" ]]; then
		echo "$doc: package $p imports $w, the map says $got"
		bad=1
	fi
done
for p in "${!rows[@]}"; do
	if ! grep -qx "$p" <<<"$pkgs"; then
		echo "$doc: the map lists $p, which is not a package of the module"
		bad=1
	fi
done
# The layout's rule: a mechanism's tree (linkguardian, cellify, fec, tdma,
# example) is its own; no package but the command depends on two of them
# (go list -deps, tests excluded).
trees='linkguardian|cellify|fec|tdma|example'
while read -r p held; do
	echo "package $p depends on several mechanisms ($held): what they share belongs in link/ or link/linkpipe"
	bad=1
done < <($go list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | awk -v mod="$mod/" -v trees="^($trees)(/|\$)" '{
	p = substr($1, length(mod) + 1); delete m; n = 0; held = ""
	for (i = 1; i <= NF; i++) {
		t = (i == 1) ? p : (index($i, mod) == 1 ? substr($i, length(mod) + 1) : "")
		if (t !~ trees) continue
		split(t, a, "/")
		if (!(a[1] in m)) { m[a[1]] = 1; n++; held = held (n > 1 ? "," : "") a[1] }
	}
	if (n > 1 && p !~ /^cmd\//) print p, held
}')
exit $bad
