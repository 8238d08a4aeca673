// Package pcapfile writes classic pcap files (LINKTYPE_ETHERNET,
// microsecond timestamps), the format every capture tool reads; tests use it
// to hand frames to tshark.
package pcapfile

import (
	"encoding/binary"
	"os"
)

// Write writes frames to path as a pcap file, frame i stamped at
// 1700000000 s + i µs.
func Write(path string, frames [][]byte) error {
	var b []byte
	le := binary.LittleEndian
	b = le.AppendUint32(b, 0xa1b2c3d4) // magic, microseconds
	b = le.AppendUint16(b, 2)          // version 2.4
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 0)     // thiszone
	b = le.AppendUint32(b, 0)     // sigfigs
	b = le.AppendUint32(b, 65535) // snaplen
	b = le.AppendUint32(b, 1)     // LINKTYPE_ETHERNET
	for i, f := range frames {
		b = le.AppendUint32(b, 1700000000) // ts seconds
		b = le.AppendUint32(b, uint32(i))  // ts microseconds
		b = le.AppendUint32(b, uint32(len(f)))
		b = le.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return os.WriteFile(path, b, 0o644)
}
