package main

import (
	"sort"

	"github.com/spf13/pflag"
)

// linkQueuesFlag is --link-queues of the experiments on the pair testbed.
func linkQueuesFlag(f *pflag.FlagSet, p *int) {
	f.IntVar(p, "link-queues", 0, "queues of every switch-to-switch link (0: the topology's; the pair preset's 1, which LinkGuardian's send fast path needs); "+
		"2 gives LinkGuardian a priority lane (queue 1) and leaves its send half in the worker")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
