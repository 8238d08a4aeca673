package main

import (
	"sort"

	"github.com/spf13/pflag"
)

// linkQueuesFlag is --link-queues of the experiments on the pair testbed.
func linkQueuesFlag(f *pflag.FlagSet, p *int) {
	f.IntVar(p, "link-queues", 0, "queues of every switch-to-switch link (0: the topology's; the pair preset's 2, queue 1 LinkGuardian's priority lane); "+
		"1 lets LinkGuardian's send fast path (--lg-fast-send) send from every CPU")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
