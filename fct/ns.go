package fct

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// openNS opens a network namespace by name (as created by `ip netns add`,
// i.e. /run/netns/NAME) or by path (anything containing a '/').
func openNS(name string) (netns.NsHandle, error) {
	if strings.Contains(name, "/") {
		return netns.GetFromPath(name)
	}
	return netns.GetFromName(name)
}

// lockInNS locks the calling goroutine to its OS thread and moves that thread
// into network namespace name ("" = stay in the current namespace). Sockets
// created by the goroutine until restore is called live in that namespace and
// stay there for their whole life. restore moves the thread back and unlocks
// it; if moving back fails the thread stays locked so that the runtime
// destroys it when the goroutine exits instead of reusing a thread that is in
// the wrong namespace.
func lockInNS(name string) (restore func(), err error) {
	runtime.LockOSThread()
	if name == "" {
		return runtime.UnlockOSThread, nil
	}
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("fct: get current netns: %w", err)
	}
	target, err := openNS(name)
	if err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("fct: open netns %q: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("fct: enter netns %q: %w", name, err)
	}
	return func() {
		err := netns.Set(orig)
		orig.Close()
		if err == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}

// inNS runs fn on a locked OS thread inside network namespace name.
func inNS(name string, fn func() error) error {
	restore, err := lockInNS(name)
	if err != nil {
		return err
	}
	defer restore()
	return fn()
}

// nsCommand builds a command that runs argv inside namespace name via
// `ip netns exec` ("" = no namespace switch).
func nsCommand(ctx context.Context, name string, argv ...string) *exec.Cmd {
	if name == "" {
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	args := append([]string{"netns", "exec", name}, argv...)
	return exec.CommandContext(ctx, "ip", args...)
}
