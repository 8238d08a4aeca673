package pfc

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/internal/pcapfile"
)

// TestTsharkDecodes writes frames made by Encode to a pcap and checks that
// Wireshark's dissector reads them as MAC Control PAUSE / PFC with our
// opcode, class-enable vector and quanta.
func TestTsharkDecodes(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not on PATH (scripts/deps.sh installs it)")
	}
	frames := []Frame{
		NewPFC(srcA, 0x09, [8]uint16{0: 0xFFFF, 3: 0x1234}),
		NewPFC(srcA, 0x80, [8]uint16{}), // resume class 7
		NewPFC(srcA, 0xFF, [8]uint16{1, 2, 3, 4, 5, 6, 7, 0xFFFF}),
		NewPause(srcB, 0x0100),
	}
	var raw [][]byte
	for _, f := range frames {
		b := make([]byte, FrameLen)
		if _, err := f.Encode(b); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	path := filepath.Join(t.TempDir(), "pfc.pcap")
	if err := pcapfile.Write(path, raw); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tshark, append([]string{"-n", "-r", path}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr // "Running as user root" warnings go here, not into the fields
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, stderr.String())
		}
		return string(out)
	}

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
	got := strings.Split(strings.TrimSpace(run(args...)), "\n")
	t.Logf("tshark -T fields -e %s:\n%s", strings.Join(fields, " -e "), strings.Join(got, "\n"))
	want := []string{
		"01:80:c2:00:00:01,0x8808,0x0101,,0x0009,65535,0,0,4660,0,0,0,0",
		"01:80:c2:00:00:01,0x8808,0x0101,,0x0080,0,0,0,0,0,0,0,0",
		"01:80:c2:00:00:01,0x8808,0x0101,,0x00ff,1,2,3,4,5,6,7,65535",
		"01:80:c2:00:00:01,0x8808,0x0001,256,,,,,,,,,",
	}
	if len(got) != len(want) {
		t.Fatalf("tshark printed %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: tshark fields\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}
