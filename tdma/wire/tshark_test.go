package wire

import (
	"strconv"
	"testing"

	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/pfc/pfctest"
)

// TestTsharkSeesPFC writes a lease grant, a pause-all and an unpause to a
// pcap and checks that Wireshark decodes each as a well-formed PFC frame:
// the trailer is padding to it.
func TestTsharkSeesPFC(t *testing.T) {
	var gs [3]Grant
	LeaseGrant(&gs[0], hostMAC, fmMAC, 3, 5e6, 1e8, sampleTrailer())
	PauseAll(&gs[1], hostMAC, fmMAC, sampleTrailer())
	Unpause(&gs[2], hostMAC, fmMAC, 6, sampleTrailer())
	out := pfctest.Tshark(t, pfc.FrameLen, &gs[0], &gs[1], &gs[2])("-T", "fields", "-E", "separator=,",
		"-e", "eth.dst", "-e", "macc.opcode", "-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3", "-e", "macc.cbfc.pause_time.c0", "-e", "_ws.malformed")
	t.Logf("tshark:\n%s", out)
	q := strconv.Itoa(int(gs[0].PFC.Quanta[0]))
	pfctest.Rows(t, out, []string{
		"02:00:00:00:00:01,0x0101,0x00ff,0," + q + ",",
		"02:00:00:00:00:01,0x0101,0x00ff,65535,65535,",
		"02:00:00:00:00:01,0x0101,0x0040,0,0,",
	})
}
