package netns

import (
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Bridge port states (IFLA_BRPORT_STATE).
const (
	brStateDisabled   = 0
	brStateListening  = 1
	brStateLearning   = 2
	brStateForwarding = 3
	brStateBlocking   = 4
)

func brStateName(s uint8) string {
	switch s {
	case brStateDisabled:
		return "disabled"
	case brStateListening:
		return "listening"
	case brStateLearning:
		return "learning"
	case brStateForwarding:
		return "forwarding"
	case brStateBlocking:
		return "blocking"
	}
	return fmt.Sprintf("state%d", s)
}

// createBridge creates bridge name with STP off, forward delay 0 and
// multicast snooping off, in the calling thread's namespace.
func createBridge(name string, mtu int) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	if mtu > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(mtu))))
	}
	li := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	li.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	data := li.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_BR_FORWARD_DELAY, nl.Uint32Attr(0))
	data.AddRtAttr(nl.IFLA_BR_STP_STATE, nl.Uint32Attr(0))
	data.AddRtAttr(nl.IFLA_BR_MCAST_SNOOPING, nl.Uint8Attr(0))
	req.AddData(li)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// bridgePortStates returns the bridge port state of every enslaved port by
// ifindex, in the calling thread's namespace.
func bridgePortStates() (map[int]uint8, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_BRIDGE))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return nil, err
	}
	out := map[int]uint8{}
	for _, m := range msgs {
		ifi := nl.DeserializeIfInfomsg(m)
		attrs, err := nl.ParseRouteAttr(m[ifi.Len():])
		if err != nil {
			return nil, err
		}
		for _, a := range attrs {
			if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_PROTINFO {
				continue
			}
			infos, err := nl.ParseRouteAttr(a.Value)
			if err != nil {
				return nil, err
			}
			for _, in := range infos {
				if in.Attr.Type&^unix.NLA_F_NESTED == nl.IFLA_BRPORT_STATE && len(in.Value) > 0 {
					out[int(ifi.Index)] = in.Value[0]
				}
			}
		}
	}
	return out, nil
}
