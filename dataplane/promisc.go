package dataplane

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// Promisc turns promiscuous mode on for ifname in the calling thread's
// network namespace (IFF_PROMISC, through netlink) and returns what turns
// it off again: a link port carries other hosts' frames, as a bridge port
// does, and a NIC not in promiscuous mode drops those addressed to other
// MACs before XDP sees them. If the port was already promiscuous, restore
// leaves it so. restore works from any thread and namespace (it holds a
// netlink handle in the port's), and only once.
//
// The handle's socket is opened in the calling thread's namespace as it
// stands: no setns, which would need CAP_SYS_ADMIN even into the
// namespace the thread is already in (netlink.NewHandleAt does that).
func Promisc(ifname string) (restore func() error, err error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("promiscuous mode of %s: netlink: %w", ifname, err)
	}
	l, err := h.LinkByName(ifname)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("promiscuous mode of %s: %w", ifname, err)
	}
	if l.Attrs().Promisc != 0 {
		h.Close()
		return func() error { return nil }, nil
	}
	if err := h.SetPromiscOn(l); err != nil {
		h.Close()
		return nil, fmt.Errorf("promiscuous mode of %s: %w (ip link set %s promisc on)", ifname, err, ifname)
	}
	index := l.Attrs().Index
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		defer h.Close()
		l, err := h.LinkByIndex(index)
		if err != nil {
			return nil // the interface is gone: nothing to restore
		}
		if err := h.SetPromiscOff(l); err != nil {
			return fmt.Errorf("promiscuous mode of %s back off: %w", ifname, err)
		}
		return nil
	}, nil
}
