package dataplane

import (
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/pfc"
)

// LinkConfig is what every link mechanism (lg, lgnb, monitor, fec, and the
// layers under the cells) shares about the link ports: how frames are
// checked, where control frames go, and how fast the link is.
type LinkConfig struct {
	// Integrity is the check every link frame carries (integrity.go): a
	// CRC32C trailer for the zero value; linkcrc.Off where the NICs' MACs
	// check the Ethernet FCS; linkcrc.Auto (linkfabric run's default)
	// decides from the link ports (integrityauto.go). Both ends must agree.
	Integrity linkcrc.Integrity
	// PeerMAC is the destination of control frames; default broadcast.
	// When set (unicast), session frames from any other source are ignored.
	PeerMAC [6]byte
	// Speed (bit/s) converts pause durations to PFC quanta and is offered
	// to the link session; default 10G.
	Speed uint64
}

// defaults fills the peer MAC and the speed.
func (c *LinkConfig) defaults() {
	if c.Speed == 0 {
		c.Speed = pfc.Speed10G
	}
	if c.PeerMAC == ([6]byte{}) {
		c.PeerMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
}
