package cli

import (
	"strings"
	"testing"
)

// A missing capability is named with what it is for and how to grant it;
// holding every one passes.
func TestMissingCaps(t *testing.T) {
	need := []Need{{CapNetAdmin, "XDP"}, {CapNetRaw, "AF_XDP sockets"}, {CapSysAdmin, "setns"}}
	all := uint64(1)<<CapNetAdmin | 1<<CapNetRaw | 1<<CapSysAdmin
	if err := missingCaps("run", all, need); err != nil {
		t.Errorf("with every capability: %v", err)
	}
	err := missingCaps("run", all&^(1<<CapNetRaw), need)
	if err == nil {
		t.Fatal("without CAP_NET_RAW: no error")
	}
	for _, want := range []string{"run needs CAP_NET_RAW (AF_XDP sockets)", "setcap cap_net_admin,cap_net_raw,cap_sys_admin+ep", "AmbientCapabilities=", "missing here: net_raw"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "CAP_NET_ADMIN (") {
		t.Errorf("error %q names a capability the process holds", err)
	}
}

// RunNeeds asks for CAP_SYS_ADMIN only to enter a namespace (on a kernel
// with CAP_BPF).
func TestRunNeeds(t *testing.T) {
	if lastCap() < int(CapBPF) {
		t.Skip("kernel without CAP_BPF")
	}
	has := func(ns []Need, c Capability) bool {
		for _, n := range ns {
			if n.Cap == c {
				return true
			}
		}
		return false
	}
	if has(RunNeeds(false), CapSysAdmin) || !has(RunNeeds(true), CapSysAdmin) {
		t.Errorf("RunNeeds: CAP_SYS_ADMIN without a namespace %v, with one %v", has(RunNeeds(false), CapSysAdmin), has(RunNeeds(true), CapSysAdmin))
	}
	for _, c := range []Capability{CapNetAdmin, CapNetRaw, CapBPF, CapPerfmon, CapIPCLock} {
		if !has(RunNeeds(false), c) {
			t.Errorf("RunNeeds lacks %v", c)
		}
	}
}
