package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces live (as for "ip netns").
const RunDir = "/run/netns"

// Do runs fn with its OS thread switched into the named network namespace ns
// (a name under /run/netns, as "ip netns" uses).
//
// fn runs on its own goroutine locked to one OS thread; Do waits for it and
// returns its error. Everything fn does through that thread happens in ns:
// sockets, netlink sockets, /proc/sys/net writes. Sockets and other fds
// created inside stay bound to ns after Do returns, so fn may open a socket
// (for example an AF_XDP socket or a listener) and hand it out. Goroutines
// that fn starts do NOT run in ns. Read per-namespace proc files through
// /proc/thread-self/net, not /proc/net (which follows the main thread). If the thread cannot be switched back,
// it is left locked so the Go runtime discards it instead of reusing it.
func Do(ns string, fn func() error) error {
	target, err := vnetns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: open: %w (does the namespace exist? see \"ip netns list\")", ns, err)
	}
	defer target.Close()
	return doIn(target, ns, fn)
}

func doIn(target vnetns.NsHandle, ns string, fn func() error) error {
	return onThread(ns, func() error {
		if err := vnetns.Set(target); err != nil {
			return fmt.Errorf("netns %s: setns: %w", ns, err)
		}
		return fn()
	})
}

// onThread runs fn on a locked OS thread of its own and then switches that
// thread back to the namespace it was in (fn may switch it: setns, or
// creating a namespace). If the thread cannot be switched back it is left
// locked: the runtime kills it when its goroutine exits.
func onThread(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: current namespace: %w", err)
			return
		}
		defer orig.Close()
		ferr := fn()
		if err := vnetns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("netns %s: switching back: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Command returns a command that runs name with args inside namespace ns
// via "ip netns exec ns name args...". Inside, /sys is remounted for ns.
func Command(ctx context.Context, ns string, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Sysctl writes value to key (dotted, "net.ipv4.tcp_sack", or a path under
// /proc/sys) from inside namespace ns. The /proc/sys/net tree is per
// namespace; other keys are global.
func Sysctl(ns, key, value string) error {
	p := sysctlPath(key)
	err := Do(ns, func() error {
		return os.WriteFile(p, []byte(value), 0)
	})
	if err != nil {
		return fmt.Errorf("netns %s: sysctl %s=%s: %w", ns, key, value, err)
	}
	return nil
}

// ReadSysctl reads key from inside namespace ns.
func ReadSysctl(ns, key string) (string, error) {
	var v string
	p := sysctlPath(key)
	err := Do(ns, func() error {
		b, err := os.ReadFile(p)
		v = strings.TrimSpace(string(b))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("netns %s: sysctl %s: %w", ns, key, err)
	}
	return v, nil
}

func sysctlPath(key string) string {
	if strings.HasPrefix(key, "/proc/sys/") {
		return key
	}
	if strings.Contains(key, "/") {
		return filepath.Join("/proc/sys", key)
	}
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// SetRouteRTOMin replaces the route to prefix (e.g. "10.0.0.0/24") via dev
// in namespace ns with one carrying the rto_min metric d, like
// "ip route replace 10.0.0.0/24 dev eth0 rto_min 1ms". The kernel keeps the
// metric in milliseconds, so d must be a whole number of ms, at least 1 ms.
// The preferred source of an existing route to prefix is kept.
func SetRouteRTOMin(ns, dev, prefix string, d time.Duration) error {
	if d < time.Millisecond || d%time.Millisecond != 0 {
		return fmt.Errorf("netns %s: rto_min %v: must be a whole number of milliseconds >= 1ms", ns, d)
	}
	_, dst, err := net.ParseCIDR(prefix)
	if err != nil {
		return fmt.Errorf("netns %s: route %q: want a prefix like 10.0.0.0/24", ns, prefix)
	}
	h, link, closeH, err := linkFor(ns, dev)
	if err != nil {
		return fmt.Errorf("route %s: %w", prefix, err)
	}
	defer closeH()
	r := &netlink.Route{
		LinkIndex: link.Attrs().Index,
		Dst:       dst,
		Scope:     netlink.SCOPE_LINK,
		RtoMin:    int(d / time.Millisecond),
	}
	if old, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dst, LinkIndex: r.LinkIndex},
		netlink.RT_FILTER_DST|netlink.RT_FILTER_OIF); err == nil {
		for _, o := range old {
			if o.Src != nil {
				r.Src = o.Src
				r.Protocol = o.Protocol
				break
			}
		}
	}
	if err := h.RouteReplace(r); err != nil {
		return fmt.Errorf("netns %s: ip route replace %s dev %s rto_min %v: %w", ns, prefix, dev, d, err)
	}
	return nil
}

// RouteRTOMin returns the rto_min metric of the route to prefix via dev in
// ns (0 if none).
func RouteRTOMin(ns, dev, prefix string) (time.Duration, error) {
	_, dst, err := net.ParseCIDR(prefix)
	if err != nil {
		return 0, fmt.Errorf("netns %s: route %q: want a prefix like 10.0.0.0/24", ns, prefix)
	}
	h, link, closeH, err := linkFor(ns, dev)
	if err != nil {
		return 0, err
	}
	defer closeH()
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dst, LinkIndex: link.Attrs().Index},
		netlink.RT_FILTER_DST|netlink.RT_FILTER_OIF)
	if err != nil {
		return 0, fmt.Errorf("netns %s: route list: %w", ns, err)
	}
	for _, r := range rs {
		if r.RtoMin > 0 {
			return time.Duration(r.RtoMin) * time.Millisecond, nil
		}
	}
	return 0, nil
}

// Ping sends one ICMP echo from namespace fromNS to addr and waits up to a
// second for the reply (ping -c1 -W1).
func Ping(ctx context.Context, fromNS, addr string) error {
	out, err := Command(ctx, fromNS, "ping", "-n", "-q", "-c", "1", "-W", "1", addr).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("netns %s: ping %s: %v: %s", fromNS, addr, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// WaitPing pings addr from fromNS until a reply comes back or ctx ends.
func WaitPing(ctx context.Context, fromNS, addr string) error {
	var last error
	for {
		err := Ping(ctx, fromNS, addr)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if last == nil {
				last = err
			}
			return fmt.Errorf("netns %s: no ping reply from %s before deadline: %w (is forwarding set up? see Status)", fromNS, addr, last)
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// linkFor returns a netlink handle bound to the named namespace and its
// device dev.
func linkFor(ns, dev string) (*netlink.Handle, netlink.Link, func(), error) {
	h, closeH, err := handleFor(ns)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := h.LinkByName(dev)
	if err != nil {
		closeH()
		return nil, nil, nil, fmt.Errorf("netns %s: device %s: %w", ns, dev, err)
	}
	return h, l, closeH, nil
}

// handleFor returns a netlink handle bound to the named namespace.
func handleFor(ns string) (*netlink.Handle, func(), error) {
	nsh, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, nil, fmt.Errorf("netns %s: open: %w (does the namespace exist? see \"ip netns list\")", ns, err)
	}
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		nsh.Close()
		return nil, nil, fmt.Errorf("netns %s: netlink: %w", ns, err)
	}
	return h, func() { h.Close(); nsh.Close() }, nil
}

// nsExists reports whether a named namespace file exists.
func nsExists(ns string) bool {
	_, err := os.Stat(filepath.Join(RunDir, ns))
	return err == nil
}

// makeRunDirShared makes /run/netns a shared mount point, as "ip netns add"
// does, so namespaces we mount there behave exactly like iproute2's.
func makeRunDirShared() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if err != unix.EINVAL {
		return err
	}
	if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
}

// createNamed creates the named namespace ns without disturbing the calling
// goroutine's thread. It fails if the name exists.
func createNamed(ns string) (vnetns.NsHandle, error) {
	if err := makeRunDirShared(); err != nil {
		return vnetns.None(), fmt.Errorf("netns %s: preparing %s: %w", ns, RunDir, err)
	}
	h := vnetns.None()
	err := onThread(ns, func() error {
		var err error
		h, err = vnetns.NewNamed(ns)
		return err
	})
	return h, err
}
