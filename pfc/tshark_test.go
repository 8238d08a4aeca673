package pfc

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/pfc/pfctest"
)

// TestTsharkDecodes writes frames made by Encode to a pcap and checks that
// Wireshark's dissector reads them as MAC Control PAUSE / PFC with our
// opcode, class-enable vector and quanta.
func TestTsharkDecodes(t *testing.T) {
	frames := []Frame{
		NewPFC(srcA, 0x09, [8]uint16{0: 0xFFFF, 3: 0x1234}),
		NewPFC(srcA, 0x80, [8]uint16{}), // resume class 7
		NewPFC(srcA, 0xFF, [8]uint16{1, 2, 3, 4, 5, 6, 7, 0xFFFF}),
		NewPause(srcB, 0x0100),
	}
	run := pfctest.Tshark(t, FrameLen, &frames[0], &frames[1], &frames[2], &frames[3])

	verbose := run("-V")
	t.Logf("tshark -V:\n%s", verbose)
	for _, want := range []string{
		"MAC Control",
		"Opcode: Class Based Flow Control [CBFC] Pause (0x0101)",
		"Opcode: Pause (0x0001)",
		"pause_time: 256",
		"CBFC Class Enable Vector: 0x0009, C0, C3",
		"CBFC Class Enable Vector: 0x0080, C7",
	} {
		if !strings.Contains(verbose, want) {
			t.Errorf("tshark -V output lacks %q", want)
		}
	}
	if strings.Contains(verbose, "must be 0") || strings.Contains(verbose, "Malformed") || strings.Contains(verbose, "Unknown opcode") {
		t.Error("tshark flags a frame as malformed")
	}

	fields := []string{"eth.dst", "eth.type", "macc.opcode", "macc.pause_time", "macc.cbfc.enbv"}
	for c := 0; c < 8; c++ {
		fields = append(fields, "macc.cbfc.pause_time.c"+string(rune('0'+c)))
	}
	args := []string{"-T", "fields", "-E", "separator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	got := run(args...)
	t.Logf("tshark -T fields -e %s:\n%s", strings.Join(fields, " -e "), got)
	pfctest.Rows(t, got, []string{
		"01:80:c2:00:00:01,0x8808,0x0101,,0x0009,65535,0,0,4660,0,0,0,0",
		"01:80:c2:00:00:01,0x8808,0x0101,,0x0080,0,0,0,0,0,0,0,0",
		"01:80:c2:00:00:01,0x8808,0x0101,,0x00ff,1,2,3,4,5,6,7,65535",
		"01:80:c2:00:00:01,0x8808,0x0001,256,,,,,,,,,",
	})
}
