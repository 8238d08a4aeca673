package cli

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// envInNetns marks a process that linkfabric already re-executed inside a network
// namespace, so it does not do it again.
const envInNetns = "LINKFABRIC_IN_NETNS"

// EnterNetns makes the whole process run inside network namespace ns.
//
// A Go process cannot move all of its threads into another namespace once the
// runtime has started them, so linkfabric re-executes itself under
// `ip netns exec NS`, which also mounts the namespace's own /sys. The process image
// is replaced (same PID), so signals sent to it reach the new program directly.
func EnterNetns(ns string) error {
	if ns == "" || os.Getenv(envInNetns) == ns {
		return nil
	}
	if err := RequireCaps(fmt.Sprintf("entering network namespace %q", ns), []Need{{CapSysAdmin, "setns and mounting the namespace's /sys"}}); err != nil {
		return err
	}
	if _, err := os.Stat("/run/netns/" + ns); err != nil {
		return fmt.Errorf("network namespace %q does not exist (ip netns list shows the ones that do; `linkfabric up --mode none` creates a testbed)", ns)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("entering network namespace %q needs the ip command (iproute2): run scripts/deps.sh", ns)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	argv := append([]string{"ip", "netns", "exec", ns, self}, os.Args[1:]...)
	env := append(os.Environ(), envInNetns+"="+ns)
	return syscall.Exec(ip, argv, env)
}
