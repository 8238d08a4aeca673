package fct

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/google/gopacket"
)

// pcapReader is a minimal reader for the classic libpcap file format
// (microsecond and nanosecond variants, either byte order) as written by
// tcpdump -w. gopacket's pcapgo would do, but it pulls in golang.org/x/net,
// which this module's go.sum does not carry; the format is 40 lines.
type pcapReader struct {
	r        io.Reader
	order    binary.ByteOrder
	nanos    bool
	linkType uint32
	snaplen  uint32
	hdr      [16]byte
	buf      []byte
}

const (
	pcapMagicMicros = 0xa1b2c3d4
	pcapMagicNanos  = 0xa1b23c4d
)

func newPcapReader(r io.Reader) (*pcapReader, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("pcap file header: %w", err)
	}
	p := &pcapReader{r: r}
	for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		switch o.Uint32(h[0:4]) {
		case pcapMagicMicros:
			p.order = o
		case pcapMagicNanos:
			p.order, p.nanos = o, true
		}
		if p.order != nil {
			break
		}
	}
	if p.order == nil {
		return nil, fmt.Errorf("not a pcap file (magic %x)", h[0:4])
	}
	p.snaplen = p.order.Uint32(h[16:20])
	p.linkType = p.order.Uint32(h[20:24]) & 0x0fffffff
	return p, nil
}

// ReadPacketData returns the next packet; the data is valid until the next call.
func (p *pcapReader) ReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	if _, err := io.ReadFull(p.r, p.hdr[:]); err != nil {
		return nil, ci, err
	}
	sec := int64(p.order.Uint32(p.hdr[0:4]))
	frac := int64(p.order.Uint32(p.hdr[4:8]))
	if !p.nanos {
		frac *= 1000
	}
	ci.Timestamp = time.Unix(sec, frac)
	ci.CaptureLength = int(p.order.Uint32(p.hdr[8:12]))
	ci.Length = int(p.order.Uint32(p.hdr[12:16]))
	if ci.CaptureLength > 1<<18 {
		return nil, ci, fmt.Errorf("pcap record of %d bytes: corrupt file", ci.CaptureLength)
	}
	if cap(p.buf) < ci.CaptureLength {
		p.buf = make([]byte, ci.CaptureLength)
	}
	p.buf = p.buf[:ci.CaptureLength]
	if _, err := io.ReadFull(p.r, p.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, ci, err
	}
	return p.buf, ci, nil
}
