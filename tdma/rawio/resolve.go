package rawio

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Resolve returns the MAC of each address from the neighbour table of
// interface ifindex, prodding ARP with a one-byte datagram to port on each
// address not yet known; it gives up after wait. Call it in the
// interface's namespace.
func Resolve(u *UDP, ifindex int, addrs []netip.Addr, port uint16, wait time.Duration) ([][6]byte, error) {
	macs := make([][6]byte, len(addrs))
	deadline := time.Now().Add(wait)
	const ok = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT
	for {
		neigh, err := netlink.NeighList(ifindex, unix.AF_INET)
		if err != nil {
			return nil, fmt.Errorf("rawio: neighbour table of ifindex %d: %w", ifindex, err)
		}
		missing := -1
		for i, a := range addrs {
			found := false
			for _, n := range neigh {
				if ip, good := netip.AddrFromSlice(n.IP.To4()); good && ip == a && len(n.HardwareAddr) == 6 && n.State&ok != 0 {
					copy(macs[i][:], n.HardwareAddr)
					found = true
				}
			}
			if !found {
				missing = i
				u.WriteToUDPAddrPort([]byte{0}, netip.AddrPortFrom(a, port))
			}
		}
		if missing < 0 {
			return macs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("rawio: no MAC for %s after %v of ARP: is it up and on this subnet?", addrs[missing], wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
