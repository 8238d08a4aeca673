package dataplane

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
)

// TestCheckMTU: a link port whose MTU cannot carry a host frame of full size
// plus the link header, or a port whose largest frame does not fit a UMEM
// frame, is refused at startup with the interface, the namespace and the
// command that fixes it; fitting MTUs are accepted.
func TestCheckMTU(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mode           Mode
		frameSize      uint32
		hostMTU, lkMTU int
		want           []string
	}{
		{"lg link MTU = host MTU", modeLG, 4096, 1500, 1500, []string{"link0", "lfsw1", "ip -n lfsw1 link set dev link0 mtu 1512"}},
		{"lgnb link MTU short by one", modeLGNB, 4096, 1500, 1500 + 12 - 1, []string{"link0", "mtu 1512"}},
		{"lg without a trailer's room", modeLG, 4096, 1500, 1508, []string{"link0", "mtu 1512", "--integrity crc32c"}},
		{"monitor too", modeMonitor, 4096, 9000 - 100, 9000 - 100, []string{"link0"}},
		{"forward host frame beyond a 2048 UMEM frame", ModeForward, 2048, 3000, 3000, []string{"host0", "--frame-size 4096"}},
		{"lg link frame beyond a 4096 UMEM frame", modeLG, 4096, 3500, 3900, []string{"link0", "--frame-size", "mtu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{HostPort: "host0", LinkPort: "link0", Netns: "lfsw1", Mode: tc.mode, FrameSize: tc.frameSize}
			err := c.checkMTU(tc.hostMTU, tc.lkMTU)
			if err == nil {
				t.Fatalf("%s: host MTU %d, link MTU %d, frame size %d accepted", tc.mode, tc.hostMTU, tc.lkMTU, tc.frameSize)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	for _, tc := range []struct {
		mode           Mode
		frameSize      uint32
		hostMTU, lkMTU int
	}{
		{modeLG, 4096, 1500, 1516}, // the testbed's
		{modeLG, 4096, 1500, 1500 + 12},
		{ModeForward, 4096, 1500, 1500},
		{ModeForward, 2048, 1500, 1500},
		{modeLG, 4096, 3490, 3506},
	} {
		c := Config{HostPort: "host0", LinkPort: "link0", Mode: tc.mode, FrameSize: tc.frameSize}
		if err := c.checkMTU(tc.hostMTU, tc.lkMTU); err != nil {
			t.Errorf("%s, host MTU %d, link MTU %d, frame size %d: %v", tc.mode, tc.hostMTU, tc.lkMTU, tc.frameSize, err)
		}
	}
	off := Config{HostPort: "host0", LinkPort: "link0", Mode: modeLG, FrameSize: 4096}
	off.Link.Integrity = linkcrc.Off
	if err := off.checkMTU(1500, 1508); err != nil {
		t.Errorf("lg --integrity off, host MTU 1500, link MTU 1508 (link header only): %v", err)
	}
}
