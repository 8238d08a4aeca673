// Package nfq is a minimal nfnetlink_queue client on golang.org/x/sys/unix:
// bind a queue, choose the copy mode, receive queued packets with their ids,
// and give verdicts one by one or for every id up to one (batch). It is the
// host agent's gate for kernel TCP/UDP in nfqueue mode: packets held in the
// queue stay charged to their sockets, so a closed gate stops TCP without
// drops (design §2.5).
//
// A Queue belongs to one goroutine. Open it inside the network namespace of
// the traffic (netns.Do); the socket stays there.
package nfq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	subsysQueue = 3 // NFNL_SUBSYS_QUEUE

	msgPacket       = 0 // NFQNL_MSG_PACKET
	msgVerdict      = 1 // NFQNL_MSG_VERDICT
	msgConfig       = 2 // NFQNL_MSG_CONFIG
	msgVerdictBatch = 3 // NFQNL_MSG_VERDICT_BATCH

	cfgCmd    = 1 // NFQA_CFG_CMD
	cfgParams = 2 // NFQA_CFG_PARAMS
	cfgMaxLen = 3 // NFQA_CFG_QUEUE_MAXLEN
	cfgMask   = 4 // NFQA_CFG_MASK
	cfgFlags  = 5 // NFQA_CFG_FLAGS

	cmdBind   = 1 // NFQNL_CFG_CMD_BIND
	cmdUnbind = 2 // NFQNL_CFG_CMD_UNBIND

	attrPacketHdr  = 1  // NFQA_PACKET_HDR
	attrVerdictHdr = 2  // NFQA_VERDICT_HDR
	attrMark       = 3  // NFQA_MARK
	attrOutDev     = 6  // NFQA_IFINDEX_OUTDEV
	attrPayload    = 10 // NFQA_PAYLOAD
	attrCapLen     = 13 // NFQA_CAP_LEN
)

// CopyMode says how much of each packet the kernel copies to us.
type CopyMode uint8

// Copy modes.
const (
	CopyNone   CopyMode = 0
	CopyMeta   CopyMode = 1 // metadata only (id, length, devices)
	CopyPacket CopyMode = 2 // metadata and the first Range bytes
)

// Config flags (NFQA_CFG_F_*).
const (
	FlagFailOpen uint32 = 1 << 0 // accept instead of dropping when the queue is full
	FlagGSO      uint32 = 1 << 2 // hand GSO packets whole, unsegmented
)

// Verdicts.
const (
	Drop   uint32 = 0 // NF_DROP
	Accept uint32 = 1 // NF_ACCEPT
)

// Config configures a queue.
type Config struct {
	Num    uint16   // queue number (iptables --queue-num)
	Copy   CopyMode // default CopyMeta
	Range  uint32   // bytes copied with CopyPacket (e.g. 64: the IP and L4 headers)
	MaxLen uint32   // packets the kernel holds before dropping (or failing open); 0: kernel default (1024)
	Flags  uint32   // Flag* bits
}

// Packet is a queued packet. Payload points into the Queue's buffer and is
// valid until the next Receive.
type Packet struct {
	ID      uint32
	Proto   uint16 // hardware protocol (ethertype), e.g. 0x0800
	Hook    uint8
	Len     int // the packet's full length
	Mark    uint32
	OutDev  uint32 // output interface index, 0 if none
	Payload []byte // the first Range bytes with CopyPacket
}

// Errors. Test with errors.Is.
var (
	ErrMalformed = errors.New("nfq: malformed netlink message")
)

// Queue is a bound nfnetlink queue.
type Queue struct {
	fd  int
	num uint16
	seq uint32
	buf []byte
	out []byte
	// Malformed counts messages dropped because they could not be parsed.
	Malformed uint64
}

// Open binds queue cfg.Num in the calling thread's network namespace.
func Open(cfg Config) (*Queue, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nfq: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nfq: bind netlink socket: %w", err)
	}
	// Many queued packets arrive at once: a large receive buffer, and no
	// ENOBUFS error when it overflows (the kernel then drops or fails open).
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	q := &Queue{fd: fd, num: cfg.Num, buf: make([]byte, 1<<16), out: make([]byte, 0, 256)}
	if cfg.Copy == CopyNone {
		cfg.Copy = CopyMeta
	}
	steps := []func() error{
		func() error { return q.config(cfgCmd, []byte{cmdBind, 0, 0, 0}) },
		func() error {
			p := make([]byte, 5)
			binary.BigEndian.PutUint32(p, cfg.Range)
			p[4] = byte(cfg.Copy)
			return q.config(cfgParams, p)
		},
	}
	if cfg.MaxLen > 0 {
		steps = append(steps, func() error { return q.config(cfgMaxLen, be32(cfg.MaxLen)) })
	}
	if cfg.Flags != 0 {
		steps = append(steps, func() error { return q.config2(cfgFlags, be32(cfg.Flags), cfgMask, be32(cfg.Flags)) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("nfq: queue %d: %w", cfg.Num, err)
		}
	}
	return q, nil
}

// SetReadTimeout bounds how long Receive blocks (0: forever); Receive
// then fails with EAGAIN.
func (q *Queue) SetReadTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(q.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// Fd returns the socket, for poll.
func (q *Queue) Fd() int { return q.fd }

// Close unbinds the queue and closes the socket; packets still queued are
// then accepted or dropped by the kernel as the rule says (--queue-bypass
// accepts).
func (q *Queue) Close() error {
	_ = q.config(cfgCmd, []byte{cmdUnbind, 0, 0, 0})
	return unix.Close(q.fd)
}

func be32(v uint32) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, v)
	return b
}

// header appends an nlmsghdr and nfgenmsg for msg type t.
func (q *Queue) header(b []byte, t uint16, flags uint16) []byte {
	q.seq++
	b = binary.NativeEndian.AppendUint32(b, 0) // length, patched by finish
	b = binary.NativeEndian.AppendUint16(b, subsysQueue<<8|t)
	b = binary.NativeEndian.AppendUint16(b, unix.NLM_F_REQUEST|flags)
	b = binary.NativeEndian.AppendUint32(b, q.seq)
	b = binary.NativeEndian.AppendUint32(b, 0) // port id: the kernel
	b = append(b, unix.AF_UNSPEC, unix.NFNETLINK_V0)
	return binary.BigEndian.AppendUint16(b, q.num)
}

func attr(b []byte, t uint16, v []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, t)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func finish(b []byte) []byte {
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	return b
}

func (q *Queue) config(t uint16, v []byte) error {
	b := finish(attr(q.header(q.out[:0], msgConfig, unix.NLM_F_ACK), t, v))
	return q.request(b)
}

func (q *Queue) config2(t1 uint16, v1 []byte, t2 uint16, v2 []byte) error {
	b := finish(attr(attr(q.header(q.out[:0], msgConfig, unix.NLM_F_ACK), t1, v1), t2, v2))
	return q.request(b)
}

// request sends b and waits for its acknowledgement, skipping packets
// that arrive meanwhile (they stay queued in the kernel until a verdict).
func (q *Queue) request(b []byte) error {
	if err := unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	seq := q.seq
	for {
		n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
		if err != nil {
			return fmt.Errorf("receive ack: %w", err)
		}
		msgs := q.buf[:n]
		for len(msgs) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(msgs))
			if l < unix.NLMSG_HDRLEN || l > len(msgs) {
				return ErrMalformed
			}
			typ := binary.NativeEndian.Uint16(msgs[4:])
			s := binary.NativeEndian.Uint32(msgs[8:])
			if typ == unix.NLMSG_ERROR && s == seq {
				if l < unix.NLMSG_HDRLEN+4 {
					return ErrMalformed
				}
				if e := int32(binary.NativeEndian.Uint32(msgs[16:])); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			msgs = msgs[nlmAlign(l):]
		}
	}
}

func nlmAlign(l int) int { return min((l+3)&^3, 1<<30) }

// Receive blocks until the kernel hands over packets and appends them to
// pkts (reusing its storage). Packets' payloads are valid until the next
// Receive. Malformed messages are counted and skipped.
func (q *Queue) Receive(pkts []Packet) ([]Packet, error) {
	n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
	if err != nil {
		return pkts, err
	}
	return q.parse(q.buf[:n], pkts), nil
}

// parse appends the packets in msgs to pkts.
func (q *Queue) parse(msgs []byte, pkts []Packet) []Packet {
	for len(msgs) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(msgs))
		if l < unix.NLMSG_HDRLEN || l > len(msgs) {
			q.Malformed++
			return pkts
		}
		typ := binary.NativeEndian.Uint16(msgs[4:])
		body := msgs[unix.NLMSG_HDRLEN:l]
		msgs = msgs[min(nlmAlign(l), len(msgs)):]
		if typ != subsysQueue<<8|msgPacket {
			continue
		}
		if len(body) < 4 {
			q.Malformed++
			continue
		}
		var p Packet
		ok := false
		for a := body[4:]; len(a) >= 4; {
			al := int(binary.NativeEndian.Uint16(a))
			at := binary.NativeEndian.Uint16(a[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
			if al < 4 || al > len(a) {
				q.Malformed++ // a packet whose id was read is still reported, for its verdict
				break
			}
			v := a[4:al]
			switch at {
			case attrPacketHdr:
				if len(v) >= 7 {
					p.ID = binary.BigEndian.Uint32(v)
					p.Proto = binary.BigEndian.Uint16(v[4:])
					p.Hook = v[6]
					ok = true
				}
			case attrMark:
				if len(v) >= 4 {
					p.Mark = binary.BigEndian.Uint32(v)
				}
			case attrOutDev:
				if len(v) >= 4 {
					p.OutDev = binary.BigEndian.Uint32(v)
				}
			case attrPayload:
				p.Payload = v
				if p.Len == 0 {
					p.Len = len(v)
				}
			case attrCapLen:
				if len(v) >= 4 {
					p.Len = int(binary.BigEndian.Uint32(v))
				}
			}
			a = a[min((al+3)&^3, len(a)):]
		}
		if ok {
			pkts = append(pkts, p)
		} else {
			q.Malformed++ // no packet header: no id to give a verdict to
		}
	}
	return pkts
}

// Verdict gives packet id its verdict (Accept or Drop).
func (q *Queue) Verdict(id, verdict uint32) error {
	return q.verdict(msgVerdict, id, verdict)
}

// VerdictBatch gives every packet queued up to and including id the same
// verdict: one message releases a contiguous prefix of the queue.
func (q *Queue) VerdictBatch(id, verdict uint32) error {
	return q.verdict(msgVerdictBatch, id, verdict)
}

func (q *Queue) verdict(t uint16, id, verdict uint32) error {
	var v [8]byte
	binary.BigEndian.PutUint32(v[:], verdict)
	binary.BigEndian.PutUint32(v[4:], id)
	b := finish(attr(q.header(q.out[:0], t, 0), attrVerdictHdr, v[:]))
	q.out = b[:0]
	if err := unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfq: queue %d: verdict for id %d: %w", q.num, id, err)
	}
	return nil
}

// Stats is a queue's line of /proc/net/netfilter/nfnetlink_queue.
type Stats struct {
	Num          uint16
	PortID       uint32
	Total        uint64 // packets waiting for a verdict
	CopyMode     uint8
	CopyRange    uint32
	QueueDropped uint64 // dropped because the queue was full
	UserDropped  uint64 // dropped because netlink could not deliver them to us
	IDSequence   uint64 // the last packet id
}

// ReadStats reads queue num's counters from path; in a namespace opened
// with netns.Do use /proc/thread-self/net/netfilter/nfnetlink_queue.
func ReadStats(path string, num uint16) (Stats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stats{}, fmt.Errorf("nfq: %w", err)
	}
	return parseStats(string(b), num)
}

func parseStats(text string, num uint16) (Stats, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		var v [8]uint64
		bad := false
		for i := range v {
			x, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				bad = true
				break
			}
			v[i] = x
		}
		if bad || v[0] != uint64(num) {
			continue
		}
		return Stats{Num: num, PortID: uint32(v[1]), Total: v[2], CopyMode: uint8(v[3]), CopyRange: uint32(v[4]),
			QueueDropped: v[5], UserDropped: v[6], IDSequence: v[7]}, nil
	}
	return Stats{}, fmt.Errorf("nfq: queue %d not in nfnetlink_queue stats (is it bound?)", num)
}
