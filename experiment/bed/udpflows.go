package bed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// UDPWireOverhead is what a UDP datagram costs on an Ethernet wire beyond
// its payload: UDP 8, IPv4 20, Ethernet 14, preamble, FCS and gap 24.
const UDPWireOverhead = 8 + 20 + 14 + 24

// UDPHeader is the payload's head: magic, flow index, sequence number;
// a payload of UDPStamped bytes or more also carries the send time (unix
// ns, the sender's clock: one machine) after it.
const (
	udpMagic   = 0x6c665544 // "lfUD"
	UDPHeader  = 16
	UDPStamped = UDPHeader + 8
)

// UDPFlow is a paced UDP flow from a host namespace: datagrams of Payload
// bytes at Rate bit/s on the wire (UDPWireOverhead counted), Bytes of
// payload in all (0: until Duration).
type UDPFlow struct {
	Name     string
	From     string // namespace
	To       string // ip:port
	Rate     float64
	Payload  int
	Bytes    int64
	Duration time.Duration
}

// Datagrams is how many datagrams the flow sends if Bytes is set.
func (f *UDPFlow) Datagrams() int64 { return (f.Bytes + int64(f.Payload) - 1) / int64(f.Payload) }

// SendUDP runs flows at once (flow i numbered i in its datagrams) and
// returns how many datagrams each sent and when each started (unix ns). A
// sender behind its schedule (not scheduled in time) catches up at once.
func SendUDP(ctx context.Context, flows []UDPFlow) (sent []uint64, start []int64, err error) {
	conns := make([]*net.UDPConn, len(flows))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, f := range flows {
		if f.Payload < UDPHeader || f.Rate <= 0 || (f.Bytes <= 0 && f.Duration <= 0) {
			return nil, nil, fmt.Errorf("udp flow %s: payload %d (want ≥ %d), rate %g, bytes %d, duration %v", f.Name, f.Payload, UDPHeader, f.Rate, f.Bytes, f.Duration)
		}
		raddr, err := net.ResolveUDPAddr("udp4", f.To)
		if err != nil {
			return nil, nil, err
		}
		if err := netns.Do(f.From, func() error {
			var err error
			conns[i], err = net.DialUDP("udp4", nil, raddr)
			return err
		}); err != nil {
			return nil, nil, fmt.Errorf("udp flow %s from %s: %w", f.Name, f.From, err)
		}
	}
	sent, start = make([]uint64, len(flows)), make([]int64, len(flows))
	var wg sync.WaitGroup
	for i := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i], start[i] = paceUDP(ctx, conns[i], uint32(i), &flows[i])
		}()
	}
	wg.Wait()
	return sent, start, ctx.Err()
}

func paceUDP(ctx context.Context, c *net.UDPConn, flow uint32, f *UDPFlow) (uint64, int64) {
	buf := make([]byte, f.Payload)
	binary.BigEndian.PutUint32(buf[0:], udpMagic)
	binary.BigEndian.PutUint32(buf[4:], flow)
	per := float64(f.Payload+UDPWireOverhead) * 8 / f.Rate // seconds per datagram
	total := int64(-1)
	if f.Bytes > 0 {
		total = f.Datagrams()
	}
	t0 := time.Now()
	var seq int64
	for ctx.Err() == nil && seq != total {
		el := time.Since(t0)
		if f.Duration > 0 && el >= f.Duration {
			break
		}
		due := int64(el.Seconds()/per) + 1
		if total >= 0 {
			due = min(due, total)
		}
		if seq >= due {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		for ; seq < due; seq++ {
			binary.BigEndian.PutUint64(buf[8:], uint64(seq))
			if len(buf) >= UDPStamped {
				binary.BigEndian.PutUint64(buf[UDPHeader:], uint64(time.Now().UnixNano()))
			}
			c.Write(buf) // a refused or dropped datagram is a loss the receiver counts
		}
	}
	return uint64(seq), t0.UnixNano()
}

// UDPArrival is one datagram a UDPSink received: the kernel's receive time
// (unix ns), its flow, sequence number and payload length, and when it was
// sent (unix ns; 0 if its payload was too short to carry it).
type UDPArrival struct {
	T    int64
	Flow uint32
	Seq  uint64
	Len  int
	Sent int64
}

// UDPSink receives the datagrams of SendUDP's flows on a port of a
// namespace, with the kernel's receive timestamps (SO_TIMESTAMPNS).
type UDPSink struct {
	conn *net.UDPConn
	done chan struct{}
	mu   sync.Mutex
	arr  []UDPArrival
}

// ListenUDPSink listens on addr (e.g. ":5301") in namespace ns with a 16 MiB
// receive buffer, and receives until Close.
func ListenUDPSink(ns, addr string) (*UDPSink, error) {
	la, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	s := &UDPSink{done: make(chan struct{}), arr: make([]UDPArrival, 0, 1<<16)}
	if err := netns.Do(ns, func() error {
		var err error
		s.conn, err = net.ListenUDP("udp4", la)
		return err
	}); err != nil {
		return nil, fmt.Errorf("udp sink %s in %s: %w", addr, ns, err)
	}
	rc, err := s.conn.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
			if err == nil {
				err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
			}
		})
		err = errors.Join(err, cerr)
	}
	if err != nil {
		s.conn.Close()
		return nil, fmt.Errorf("udp sink %s in %s: %w", addr, ns, err)
	}
	go s.run()
	return s, nil
}

func (s *UDPSink) run() {
	defer close(s.done)
	buf, oob := make([]byte, 65536), make([]byte, 128)
	for {
		n, oobn, _, _, err := s.conn.ReadMsgUDP(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < UDPHeader || binary.BigEndian.Uint32(buf) != udpMagic {
			continue
		}
		a := UDPArrival{T: time.Now().UnixNano(), Flow: binary.BigEndian.Uint32(buf[4:]), Seq: binary.BigEndian.Uint64(buf[8:]), Len: n}
		if n >= UDPStamped {
			a.Sent = int64(binary.BigEndian.Uint64(buf[UDPHeader:]))
		}
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
					a.T = int64(binary.NativeEndian.Uint64(m.Data))*1e9 + int64(binary.NativeEndian.Uint64(m.Data[8:]))
				}
			}
		}
		s.mu.Lock()
		s.arr = append(s.arr, a)
		s.mu.Unlock()
	}
}

// Close stops the sink and returns what it received, in arrival order.
func (s *UDPSink) Close() []UDPArrival {
	s.conn.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arr
}

// UDPFlowStats is what a flow's receiver saw of it.
type UDPFlowStats struct {
	Name       string  `json:"name"`
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"` // distinct sequence numbers
	Lost       uint64  `json:"lost"`
	OutOfOrder uint64  `json:"out_of_order"`
	Duplicates uint64  `json:"duplicates"`
	FirstMs    float64 `json:"first_ms"` // first and last arrival, ms after the flows started
	LastMs     float64 `json:"last_ms"`
}

// FlowStats counts flow's datagrams among arr (sent of them were sent;
// times relative to t0, unix ns).
func FlowStats(arr []UDPArrival, flow uint32, name string, sent uint64, t0 int64) UDPFlowStats {
	st := UDPFlowStats{Name: name, Sent: sent}
	seen := make([]uint64, (sent+63)/64)
	var maxSeq uint64
	any := false
	for _, a := range arr {
		if a.Flow != flow {
			continue
		}
		if !any {
			st.FirstMs = float64(a.T-t0) / 1e6
		}
		st.LastMs = float64(a.T-t0) / 1e6
		if any && a.Seq < maxSeq {
			st.OutOfOrder++
		}
		if !any || a.Seq > maxSeq {
			maxSeq = a.Seq
		}
		any = true
		if a.Seq >= sent {
			continue
		}
		w, bit := a.Seq/64, uint64(1)<<(a.Seq%64)
		if seen[w]&bit != 0 {
			st.Duplicates++
			continue
		}
		seen[w] |= bit
		st.Received++
	}
	st.Lost = sent - st.Received
	return st
}

// WireBits is the bits on the wire of the datagrams among arr of the flows
// in mask (bit i: flow i) that arrived in [from, to) (unix ns).
func WireBits(arr []UDPArrival, mask uint64, from, to int64) float64 {
	var b float64
	for _, a := range arr {
		if a.T >= from && a.T < to && a.Flow < 64 && mask&(1<<a.Flow) != 0 {
			b += float64(a.Len+UDPWireOverhead) * 8
		}
	}
	return b
}

// ArrivalSpan is the first and last arrival time among arr of the flows in
// mask (0, 0 if none).
func ArrivalSpan(arr []UDPArrival, mask uint64) (first, last int64) {
	for _, a := range arr {
		if a.Flow < 64 && mask&(1<<a.Flow) != 0 {
			if first == 0 || a.T < first {
				first = a.T
			}
			last = max(last, a.T)
		}
	}
	return first, last
}
