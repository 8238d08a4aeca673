// Package traffic generates and checks test frames through AF_XDP: a generator
// that sends numbered frames as fast as an interface takes them (or at a set
// rate), and a sink that counts them and finds losses, duplicates and
// reordering from their numbers. Benchmarks and the stress experiment use it;
// it knows nothing of the dataplane's protocols.
package traffic

import (
	"encoding/binary"
	"fmt"
	"net"
)

// EtherType of test frames: IEEE 802 local experimental ethertype 2 (0x88B6).
// The kernel stack ignores it, so test frames cause no replies.
const EtherType = 0x88B6

// magic marks a test frame's payload so stray frames are not counted.
const magic = 0x6c664c46 // "lfLF"

// Frame layout after the Ethernet header: magic (4), stream id (4), seq (8).
const (
	hdrLen     = 14
	offMagic   = hdrLen
	offStream  = hdrLen + 4
	offSeq     = hdrLen + 8
	MinSize    = hdrLen + 16
	DefaultLen = 60 // 64 bytes on a wire with FCS
)

// Template is what every generated frame carries.
type Template struct {
	Dst, Src net.HardwareAddr
	Stream   uint32 // tells concurrent streams apart
	Size     int    // frame length without FCS; default 60
}

func (t *Template) check() error {
	if t.Size == 0 {
		t.Size = DefaultLen
	}
	if t.Size < MinSize {
		return fmt.Errorf("traffic: frame size %d is below the minimum %d", t.Size, MinSize)
	}
	if len(t.Dst) != 6 || len(t.Src) != 6 {
		return fmt.Errorf("traffic: frame needs 6-byte source and destination MAC addresses")
	}
	return nil
}

// write writes the template with sequence number seq into b (len(b) >= Size).
func (t *Template) write(b []byte, seq uint64) {
	copy(b[0:6], t.Dst)
	copy(b[6:12], t.Src)
	binary.BigEndian.PutUint16(b[12:14], EtherType)
	binary.BigEndian.PutUint32(b[offMagic:], magic)
	binary.BigEndian.PutUint32(b[offStream:], t.Stream)
	binary.BigEndian.PutUint64(b[offSeq:], seq)
	clear(b[MinSize:t.Size])
}

// Parse returns the stream and sequence number of a test frame, and false for
// any other frame.
func Parse(b []byte) (stream uint32, seq uint64, ok bool) {
	if len(b) < MinSize || binary.BigEndian.Uint16(b[12:14]) != EtherType ||
		binary.BigEndian.Uint32(b[offMagic:]) != magic {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b[offStream:]), binary.BigEndian.Uint64(b[offSeq:]), true
}
