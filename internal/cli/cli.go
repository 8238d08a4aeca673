// Package cli holds what the commands' flag handling shares: the root
// check, comma-separated lists, numbers, sizes and rates given as text,
// and the pair testbed's --link-queues.
package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// RequireRoot fails early, with the fix, when not root.
func RequireRoot(what string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s needs root (network namespaces, XDP and AF_XDP): run it with sudo", what)
	}
	return nil
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseInts parses a comma-separated list of whole numbers (1_000 allowed).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, p := range SplitList(s) {
		n, err := strconv.Atoi(strings.ReplaceAll(p, "_", ""))
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseFlowSize parses a flag's single flow size (e.g. 100KB).
func ParseFlowSize(flag, v string) (int64, error) {
	s, err := fct.ParseSizes(v)
	if err != nil || len(s) != 1 {
		return 0, fmt.Errorf("%s %q: want one size like 100KB", flag, v)
	}
	return s[0], nil
}

// RateFlag parses the bit rate flag --name ("" keeps the default).
func RateFlag(name, v string, dst *netns.BitRate) error {
	return unitFlag(name, v, dst, netns.ParseBitRate, "a rate like 100M or 1G")
}

// SizeFlag parses the byte size flag --name ("" keeps the default).
func SizeFlag(name, v string, dst *netns.ByteSize) error {
	return unitFlag(name, v, dst, netns.ParseByteSize, "a size like 256K or 2M (K = 1024)")
}

// unitFlag parses flag --name with parse into dst ("" keeps the default; 0
// is refused); want says what the flag takes.
func unitFlag[T ~uint64 | ~int](name, v string, dst *T, parse func(string) (T, error), want string) error {
	if v == "" {
		return nil
	}
	x, err := parse(v)
	if err != nil || x == 0 {
		return fmt.Errorf("--%s %q: want %s", name, v, want)
	}
	*dst = x
	return nil
}

// LinkQueuesFlag declares --link-queues of the experiments on the pair
// testbed.
func LinkQueuesFlag(f *pflag.FlagSet, p *int) {
	f.IntVar(p, "link-queues", 0, "queues of every switch-to-switch link (0: the topology's; the pair preset's 1, which LinkGuardian's send fast path needs); "+
		"2 gives LinkGuardian a priority lane (queue 1) and leaves its send half in the worker")
}

// NeedsRoot is the PreRunE of a command that needs root: RequireRoot(what)
// once its flags are parsed, before it runs.
func NeedsRoot(what string) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) error { return RequireRoot(what) }
}

// Group is a command that only gathers others: its help, and subs as its
// subcommands (more may be added later).
func Group(use, short, long, example string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example}
	cmd.AddCommand(subs...)
	return cmd
}
