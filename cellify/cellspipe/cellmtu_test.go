package cellspipe

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestFabric3CellsCarryTwoHostFrames: on fabric3's links a default cell
// holds two full-sized host frames with their record headers under every
// link mode (fewer link frames, each a copy and a sendto, per host frame),
// and a link frame still fits one 4096-byte UMEM frame after the kernel's
// headroom, so it needs no multi-buffer chain.
func TestFabric3CellsCarryTwoHostFrames(t *testing.T) {
	topo := netns.MustPreset(t, "fabric3")
	var o netns.Options
	mtu := topo.PairMTU(o, netns.MTULink)
	hostFrame := topo.PairMTU(o, netns.MTUHost) + dataplane.EthHeaderLen + cellify.RecordHeaderLen
	if mtu+dataplane.EthHeaderLen+unix.XDP_PACKET_HEADROOM > 4096 {
		t.Errorf("fabric3's link MTU %d: a link frame takes more than one 4096-byte UMEM frame", mtu)
	}
	for _, mode := range []string{"none", "lg", "lgnb", "monitor", "fec"} {
		cellMTU := mtu
		if ls := linkpipe.FindLayer(mode); ls != nil {
			cellMTU -= ls.Overhead
		}
		c := Config{LinkMode: mode}
		if err := c.fit(cellMTU, linkcrc.CRC32C, "up0"); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if c.CellSize < 2*hostFrame {
			t.Errorf("--cells-link-mode %s at link MTU %d: cells of %d bytes; want room for two host frames (%d bytes each)", mode, mtu, c.CellSize, hostFrame)
		}
	}
}
