package wire

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/internal/pcapfile"
)

// TestTsharkSeesPFC writes a lease grant, a pause-all and an unpause to a
// pcap and checks that Wireshark decodes each as a well-formed PFC frame:
// the trailer is padding to it.
func TestTsharkSeesPFC(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not on PATH (scripts/deps.sh installs it)")
	}
	var gs [3]Grant
	LeaseGrant(&gs[0], hostMAC, fmMAC, 3, 5e6, 1e8, sampleTrailer())
	PauseAll(&gs[1], hostMAC, fmMAC, sampleTrailer())
	Unpause(&gs[2], hostMAC, fmMAC, 6, sampleTrailer())
	var raw [][]byte
	for i := range gs {
		b := make([]byte, 60)
		if _, err := gs[i].Encode(b); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	path := filepath.Join(t.TempDir(), "grant.pcap")
	if err := pcapfile.Write(path, raw); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "eth.dst", "-e", "macc.opcode", "-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3", "-e", "macc.cbfc.pause_time.c0", "-e", "_ws.malformed")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, stderr.String())
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("tshark:\n%s", out)
	q := strconv.Itoa(int(gs[0].PFC.Quanta[0]))
	want := []string{
		"02:00:00:00:00:01,0x0101,0x00ff,0," + q + ",",
		"02:00:00:00:00:01,0x0101,0x00ff,65535,65535,",
		"02:00:00:00:00:01,0x0101,0x0040,0,0,",
	}
	if len(got) != len(want) {
		t.Fatalf("tshark printed %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}
