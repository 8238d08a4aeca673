package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/linkfabric/linkfabric/internal/enum"
)

// Capability is a Linux capability, by its number (linux/capability.h).
type Capability int

// The capabilities a dataplane uses (docs/run.md, "Capabilities", says which
// call needs which).
const (
	CapNetAdmin Capability = 12
	CapNetRaw   Capability = 13
	CapIPCLock  Capability = 14
	CapSysAdmin Capability = 21
	CapPerfmon  Capability = 38
	CapBPF      Capability = 39
)

// capNames are the capabilities' names, by number.
var capNames = []string{
	CapNetAdmin: "CAP_NET_ADMIN", CapNetRaw: "CAP_NET_RAW", CapIPCLock: "CAP_IPC_LOCK",
	CapSysAdmin: "CAP_SYS_ADMIN", CapPerfmon: "CAP_PERFMON", CapBPF: "CAP_BPF",
}

func (c Capability) String() string { return enum.Name(c, "capability", capNames) }

// Need is a capability and what it is needed for, for error messages.
type Need struct {
	Cap Capability
	For string
}

// RunNeeds are the capabilities `run` needs: with netns, also CAP_SYS_ADMIN
// (entering a named network namespace). A kernel without CAP_BPF (before
// 5.8) takes CAP_SYS_ADMIN for BPF instead of CAP_BPF and CAP_PERFMON.
func RunNeeds(netns bool) []Need {
	need := []Need{
		{CapNetAdmin, "attaching XDP programs and changing links over netlink"},
		{CapNetRaw, "AF_XDP sockets"},
		{CapIPCLock, "pinning the UMEM (AF_XDP frame memory) without a memlock limit"},
	}
	if lastCap() >= int(CapBPF) {
		need = append(need, Need{CapBPF, "loading BPF programs and maps"},
			Need{CapPerfmon, "the verifier's checks of the XDP programs' pointer use"})
	} else {
		need = append(need, Need{CapSysAdmin, "BPF on a kernel before 5.8 (no CAP_BPF)"})
	}
	if netns {
		need = append(need, Need{CapSysAdmin, "entering a network namespace (setns, and mounting its /sys)"})
	}
	return need
}

// lastCap is the highest capability the kernel knows (-1 if unknown).
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// EffectiveCaps are the calling process's effective capabilities (CapEff
// of /proc/self/status), one bit per capability.
func EffectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no CapEff line")
}

// RequireCaps fails, naming each missing capability, what it is for and
// how to grant it, unless the process holds every one of need.
func RequireCaps(what string, need []Need) error {
	eff, err := EffectiveCaps()
	if err != nil {
		return fmt.Errorf("%s: cannot read this process's capabilities: %w", what, err)
	}
	return missingCaps(what, eff, need)
}

func missingCaps(what string, eff uint64, need []Need) error {
	held := func(c Capability) bool { return eff&(1<<uint(c)) != 0 }
	var miss []string
	for _, n := range need {
		if !held(n.Cap) {
			miss = append(miss, n.Cap.String()+" ("+n.For+")")
		}
	}
	if len(miss) == 0 {
		return nil
	}
	all := capList(need, func(Capability) bool { return true })
	missing := capList(need, func(c Capability) bool { return !held(c) })
	return fmt.Errorf("%s needs %s: run it as root, or with these capabilities, e.g. from a systemd unit's AmbientCapabilities= (deploy/linkfabric@.service) or `setcap cap_%s+ep %s` (missing here: %s)",
		what, strings.Join(miss, ", "), strings.Join(all, ",cap_"), selfPath(), strings.Join(missing, ", "))
}

// capList is the names, as setcap and setpriv write them (net_admin), of
// the capabilities of need that keep takes, each once, in need's order.
func capList(need []Need, keep func(Capability) bool) []string {
	var names []string
	seen := map[Capability]bool{}
	for _, n := range need {
		if keep(n.Cap) && !seen[n.Cap] {
			seen[n.Cap] = true
			names = append(names, strings.ToLower(strings.TrimPrefix(n.Cap.String(), "CAP_")))
		}
	}
	return names
}

func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return "linkfabric"
	}
	return p
}
