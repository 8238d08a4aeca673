package lgexp

import (
	"math/rand/v2"
	"net"
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// The hostile frames cover every link-header type, short and long frames,
// and both trailers: a sealed frame passes its check, so it reaches the
// parser and the core.
func TestHostileFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 0x6c66))
	dst, src := net.HardwareAddr{2, 0, 0, 0, 0, 2}, net.HardwareAddr{2, 0, 0, 0, 0, 1}
	b := make([]byte, 1514)
	var types [seqhdr.NumTypes]int
	var sealed, short, long int
	for range 20000 {
		f, ok := hostileFrame(rng, b, dst, src)
		if len(f) < 14 || len(f) > len(b) || string(f[0:6]) != string(dst) || string(f[6:12]) != string(src) ||
			uint16(f[12])<<8|uint16(f[13]) != seqhdr.EtherType {
			t.Fatalf("frame of %d bytes: not a link frame from src to dst: % x", len(f), f[:min(len(f), 16)])
		}
		if ok {
			sealed++
			if _, good := linkcrc.CRC32C.Check(f); !good {
				if _, good := linkcrc.Csum.Check(f); !good {
					t.Fatalf("a frame said to be sealed passes neither check")
				}
			}
		}
		if len(f) > 14 {
			types[f[14]&(seqhdr.NumTypes-1)]++
		}
		switch {
		case len(f) < 80:
			short++
		case len(f) > 1000:
			long++
		}
	}
	for ty, n := range types {
		if n == 0 {
			t.Errorf("no frame of type %d", ty)
		}
	}
	if sealed < 8000 || sealed > 12000 || short < 8000 || long < 1000 {
		t.Errorf("sealed %d, short %d, long %d of 20000: want about half sealed, half short, some long", sealed, short, long)
	}
}
