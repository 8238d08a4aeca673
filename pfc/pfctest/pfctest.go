// Package pfctest is what the tests of MAC Control frames (package pfc and
// the TDMA grants built on it) share: Wireshark's reading of them.
package pfctest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/internal/pcapfile"
)

// Encoder is a frame that encodes itself.
type Encoder interface {
	Encode(b []byte) (int, error)
}

// Tshark encodes frames (size bytes each: pfc.FrameLen) into a pcap and
// returns a function that runs tshark on it with args (after -n -r <pcap>)
// and returns what it prints. It skips the test when tshark is not on PATH.
func Tshark(t testing.TB, size int, frames ...Encoder) func(args ...string) string {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not on PATH (scripts/deps.sh installs it)")
	}
	var raw [][]byte
	for _, f := range frames {
		b := make([]byte, size)
		if _, err := f.Encode(b); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	path := filepath.Join(t.TempDir(), "frames.pcap")
	if err := pcapfile.Write(path, raw); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
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
}

// Rows checks tshark's rows (got, one a frame) against want.
func Rows(t testing.TB, got string, want []string) {
	t.Helper()
	rows := strings.Split(strings.TrimSpace(got), "\n")
	if len(rows) != len(want) {
		t.Fatalf("tshark printed %d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("frame %d: tshark fields\n got %s\nwant %s", i+1, rows[i], want[i])
		}
	}
}
