package fct

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// PcapFlow is one TCP connection reconstructed from a capture. The client
// is the side that sent the SYN; it is taken to be the data sender.
//
// Its FCT is DataAck - SYN: from the capture timestamp of the client's
// first SYN to that of the first packet from the server whose ACK covers the
// last payload byte the client sent (the ACK of the last data byte). With the
// capture on the sender's interface this is the sender's view: it includes
// the handshake and the last ACK's trip back, and excludes the sender
// application's time before connect() and the receiver application's read.
// The client's FIN is not data; FinAck separately records when it was ACKed.
type PcapFlow struct {
	Client netip.AddrPort `json:"client"`
	Server netip.AddrPort `json:"server"`
	// SYN is the first SYN; DataAck the first server ACK covering all client
	// data; FinAck the first server ACK covering the client's FIN (zero if
	// none was captured).
	SYN     time.Time `json:"syn"`
	DataAck time.Time `json:"data_ack"`
	FinAck  time.Time `json:"fin_ack"`
	// Bytes is the client's payload (highest sequence number sent - ISN - 1).
	Bytes int64 `json:"bytes"`
	// DataSegments counts client segments with payload, retransmissions
	// included; Retrans counts those among them whose sequence range
	// overlaps data already sent (retransmissions, including TLP probes
	// that resend the last segment); SynRetrans counts repeated SYNs and
	// FinRetrans repeated data-less FINs (e.g. a TLP probe resending the FIN).
	DataSegments int  `json:"data_segments"`
	Retrans      int  `json:"retrans"`
	SynRetrans   int  `json:"syn_retrans"`
	FinRetrans   int  `json:"fin_retrans"`
	Complete     bool `json:"complete"` // DataAck found and Bytes > 0
	// FCT = DataAck - SYN (0 if not Complete).
	FCT time.Duration `json:"fct_ns"`
}

type pcapConn struct {
	f       PcapFlow
	isn     uint32
	sent    uint32 // highest relative end sequence sent by the client (1 = SYN only)
	fin     bool
	finRel  uint32 // relative sequence of the client's FIN
	acks    []relAck
	maxAck  uint32
	ackSeen bool
}

type relAck struct {
	t   time.Time
	ack uint32
}

type tuple struct{ a, b netip.AddrPort }

// ParsePcapFile parses a pcap file; see ParsePcap.
func ParsePcapFile(path string) ([]PcapFlow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePcap(f)
}

// ParsePcap reconstructs the TCP connections in a capture file: classic
// pcap (microsecond or nanosecond timestamps, either byte order, as tcpdump
// -w writes it; gzip-compressed too) or pcapng (as dumpcap and tshark write
// it; packets of the first interface's link type), read with gopacket's
// pcapgo. Link types: Ethernet, Linux cooked (SLL), raw IP. Packets may be
// truncated by a small snap length: payload lengths come from the IP
// header. A capture cut short (tcpdump killed mid-write) is read up to its
// last whole packet. A connection is only tracked from its SYN; a new SYN
// with a different ISN on the same 4-tuple starts a new connection.
// Connections are returned in order of their first SYN. A malformed file
// is an error, never a panic (pcapgo v1.1.19 panics on some malformed
// pcapng headers, e.g. a zero timestamp resolution; that is recovered here).
func ParsePcap(r io.Reader) (flows []PcapFlow, err error) {
	defer func() {
		if p := recover(); p != nil {
			flows, err = nil, fmt.Errorf("fct: read capture: malformed file (pcapgo: %v)", p)
		}
	}()
	src, lt, err := openCapture(r)
	if err != nil {
		return nil, fmt.Errorf("fct: read capture: %w", err)
	}

	var (
		eth  layers.Ethernet
		sll  layers.LinuxSLL
		ip4  layers.IPv4
		ip6  layers.IPv6
		tcp  layers.TCP
		dot1 layers.Dot1Q
	)
	var first gopacket.LayerType
	switch lt {
	case layers.LinkTypeEthernet:
		first = layers.LayerTypeEthernet
	case layers.LinkTypeLinuxSLL:
		first = layers.LayerTypeLinuxSLL
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, 12:
		first = layers.LayerTypeIPv4
	case layers.LinkTypeIPv6:
		first = layers.LayerTypeIPv6
	default:
		return nil, fmt.Errorf("fct: capture link type %v is not supported (Ethernet, Linux cooked SLL or raw IP are; capture on one interface, not -i any)", lt)
	}
	parser := gopacket.NewDecodingLayerParser(first, &eth, &sll, &dot1, &ip4, &ip6, &tcp)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 8)

	open := map[tuple]*pcapConn{}
	var all []*pcapConn
	for {
		data, ci, err := src.ZeroCopyReadPacketData()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // a capture cut short by a killed tcpdump is still usable
		}
		if err != nil {
			return nil, fmt.Errorf("fct: read capture: %w", err)
		}
		decoded = decoded[:0]
		if lt == layers.LinkTypeRaw && len(data) > 0 && data[0]>>4 == 6 {
			p6 := gopacket.NewDecodingLayerParser(layers.LayerTypeIPv6, &ip6, &tcp)
			p6.IgnoreUnsupported = true
			p6.DecodeLayers(data, &decoded)
		} else {
			parser.DecodeLayers(data, &decoded)
		}
		var srcIP, dstIP netip.Addr
		payload := -1
		for _, l := range decoded {
			switch l {
			case layers.LayerTypeIPv4:
				srcIP, _ = netip.AddrFromSlice(ip4.SrcIP.To4())
				dstIP, _ = netip.AddrFromSlice(ip4.DstIP.To4())
				payload = int(ip4.Length) - int(ip4.IHL)*4
			case layers.LayerTypeIPv6:
				srcIP, _ = netip.AddrFromSlice(ip6.SrcIP)
				dstIP, _ = netip.AddrFromSlice(ip6.DstIP)
				payload = int(ip6.Length)
			case layers.LayerTypeTCP:
				if payload < 0 || !srcIP.IsValid() {
					continue
				}
				plen := payload - int(tcp.DataOffset)*4
				if plen < 0 {
					continue
				}
				s := netip.AddrPortFrom(srcIP, uint16(tcp.SrcPort))
				d := netip.AddrPortFrom(dstIP, uint16(tcp.DstPort))
				handleSegment(open, &all, ci.Timestamp, s, d, &tcp, uint32(plen))
			}
		}
	}
	out := make([]PcapFlow, 0, len(all))
	for _, c := range all {
		out = append(out, c.finish())
	}
	slices.SortStableFunc(out, func(a, b PcapFlow) int { return a.SYN.Compare(b.SYN) })
	return out, nil
}

// captureReader is what pcapgo's Reader (pcap) and NgReader (pcapng) share.
type captureReader interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	LinkType() layers.LinkType
}

// pcapngMagic starts every pcapng file (its Section Header Block type).
var pcapngMagic = []byte{0x0a, 0x0d, 0x0d, 0x0a}

// maxCaptureRecord bounds one captured packet (tcpdump's largest snap
// length); a larger record marks a corrupt file. pcapgo allocates what a
// file's header claims, so the claims are checked against it first.
const maxCaptureRecord = 1 << 18

// openCapture reads the file header of a pcap or pcapng capture.
func openCapture(r io.Reader) (captureReader, layers.LinkType, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, 0, fmt.Errorf("capture file header: %w", err)
	}
	if bytes.Equal(magic, pcapngMagic) {
		// pcapng is read whole and its block lengths checked before pcapgo
		// sees it: pcapgo v1.1.19 allocates a packet's claimed length (up to
		// 4 GiB) before reading it. tcpdump writes classic pcap, streamed below.
		b, err := io.ReadAll(br)
		if err != nil {
			return nil, 0, fmt.Errorf("pcapng: %w", err)
		}
		if err := checkPcapng(b); err != nil {
			return nil, 0, err
		}
		ng, err := pcapgo.NewNgReader(bytes.NewReader(b), pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, 0, fmt.Errorf("pcapng: %w", err)
		}
		return ng, ng.LinkType(), nil
	}
	p, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, 0, fmt.Errorf("not a pcap or pcapng file (first bytes %x): %w", magic, err)
	}
	if p.Snaplen() > maxCaptureRecord {
		p.SetSnaplen(maxCaptureRecord) // a larger record is then an error, not an allocation
	}
	return p, p.LinkType(), nil
}

// pcapng block types whose lengths pcapgo trusts.
const (
	ngSectionHeader   = 0x0a0d0d0a
	ngInterface       = 1
	ngPacketObsolete  = 2
	ngSimplePacket    = 3
	ngEnhancedPacket  = 6
	ngByteOrderMagicV = 0x1a2b3c4d
)

// checkPcapng walks the blocks of a pcapng file and rejects a block, snap
// length or packet length that is impossible or larger than
// maxCaptureRecord. A truncated last block is checked as far as it goes and
// left to the reader, which stops there as for any capture cut short.
func checkPcapng(b []byte) error {
	var o binary.ByteOrder = binary.LittleEndian
	for off := 0; len(b)-off >= 12; {
		typ := o.Uint32(b[off:]) // the section header's type reads the same in both orders
		if typ == ngSectionHeader {
			if len(b)-off < 16 {
				return nil
			}
			switch {
			case binary.LittleEndian.Uint32(b[off+8:]) == ngByteOrderMagicV:
				o = binary.LittleEndian
			case binary.BigEndian.Uint32(b[off+8:]) == ngByteOrderMagicV:
				o = binary.BigEndian
			default:
				return fmt.Errorf("pcapng: section header at offset %d has no byte-order magic", off)
			}
		}
		n := uint64(o.Uint32(b[off+4:]))
		if n < 12 || n%4 != 0 {
			return fmt.Errorf("pcapng: block at offset %d has length %d", off, n)
		}
		body := b[off+8:]
		whole := n <= uint64(len(b)-off)
		if whole {
			body = b[off+8 : off+int(n)-4]
		}
		// field reports whether the 32-bit field at i is present and above max.
		field := func(i int, max uint64) bool {
			return len(body) >= i+4 && uint64(o.Uint32(body[i:])) > max
		}
		var bad bool
		switch typ {
		case ngInterface: // link type, reserved, snap length
			bad = whole && len(body) < 8 || field(4, maxCaptureRecord)
		case ngPacketObsolete, ngEnhancedPacket: // ..., captured length at 12, original at 16
			bad = whole && len(body) < 20 || field(12, min(maxCaptureRecord, n-32))
		case ngSimplePacket: // original length; pcapgo reads min(it, snap length)
			bad = whole && len(body) < 4 || field(0, maxCaptureRecord)
		}
		if bad {
			return fmt.Errorf("pcapng: block of type %d at offset %d claims more data than it holds", typ, off)
		}
		if !whole {
			return nil
		}
		off += int(n)
	}
	return nil
}

func handleSegment(open map[tuple]*pcapConn, all *[]*pcapConn, ts time.Time, s, d netip.AddrPort, tcp *layers.TCP, plen uint32) {
	if tcp.SYN && !tcp.ACK {
		k := tuple{s, d}
		if c, ok := open[k]; ok && c.isn == tcp.Seq {
			c.f.SynRetrans++
			return
		}
		c := &pcapConn{f: PcapFlow{Client: s, Server: d, SYN: ts}, isn: tcp.Seq, sent: 1}
		open[k] = c
		*all = append(*all, c)
		return
	}
	if c, ok := open[tuple{s, d}]; ok { // client -> server
		rel := tcp.Seq - c.isn
		if plen > 0 {
			c.f.DataSegments++
			end := rel + plen
			if int32(rel-c.sent) < 0 {
				c.f.Retrans++
			}
			if int32(end-c.sent) > 0 {
				c.sent = end
			}
		}
		if tcp.FIN {
			switch {
			case !c.fin:
				c.fin = true
				c.finRel = rel + plen
			case plen == 0 && rel == c.finRel:
				c.f.FinRetrans++
			}
		}
		return
	}
	if c, ok := open[tuple{d, s}]; ok && tcp.ACK { // server -> client
		a := tcp.Ack - c.isn
		if !c.ackSeen || int32(a-c.maxAck) > 0 {
			c.ackSeen = true
			c.maxAck = a
			c.acks = append(c.acks, relAck{ts, a})
		}
	}
}

func (c *pcapConn) finish() PcapFlow {
	f := c.f
	f.Bytes = int64(c.sent) - 1
	for _, a := range c.acks {
		if f.Bytes > 0 && f.DataAck.IsZero() && int32(a.ack-c.sent) >= 0 {
			f.DataAck = a.t
		}
		if c.fin && f.FinAck.IsZero() && int32(a.ack-(c.finRel+1)) >= 0 {
			f.FinAck = a.t
		}
	}
	f.Complete = f.Bytes > 0 && !f.DataAck.IsZero()
	if f.Complete {
		f.FCT = f.DataAck.Sub(f.SYN)
	}
	return f
}
