package dataplane

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// TestFitFrameSize: the default UMEM frame is a page up to the MTU a page
// holds (after the kernel's headroom, with the Ethernet header and an
// integrity trailer), then the smallest power of two that holds the frame;
// a frame of the MTU takes chainLen descriptors.
func TestFitFrameSize(t *testing.T) {
	for _, tc := range []struct {
		mtu  int
		want uint32
	}{{0, 4096}, {1500, 4096}, {3506, 4096}, {3826, 4096}, {3827, 8192}, {7922, 8192}, {7923, 16384}, {9000, 16384}, {9016, 16384}, {16114, 16384}, {16115, 32768}, {65535, 65536}} {
		if got := fitFrameSize(tc.mtu); got != tc.want {
			t.Errorf("fitFrameSize(%d) = %d, want %d", tc.mtu, got, tc.want)
		}
	}
	for _, size := range []uint32{2048, 4096, 8192, 16384, 65536} {
		if err := checkFrameSize(size); err != nil {
			t.Errorf("--frame-size %d: %v", size, err)
		}
	}
	for _, size := range []uint32{1024, 3000, 12288, 131072} {
		if err := checkFrameSize(size); err == nil {
			t.Errorf("--frame-size %d accepted", size)
		}
	}
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 16384, FrameCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for n, want := range map[int]int{60: 1, 3840: 1, 3841: 2, 9034: 3, 16128: 4} {
		if got := chainLen(u, n); got != want || got != len(u.TxChain(nil, uint64(u.DataOffset()), uint32(n))) {
			t.Errorf("chainLen(%d) = %d, want %d (TxChain's length)", n, got, want)
		}
	}
}

// TestGather: the worker makes a received chain one frame, contiguous in
// its first descriptor's UMEM frame, even when the chain spans batches;
// frames that are not chains pass unchanged; the continuations' frames are
// free again at once; a chain longer than a UMEM frame is dropped whole
// (RX.Dropped) with every frame of it freed.
func TestGather(t *testing.T) {
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 16384, FrameCount: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	w := &Worker{umem: u, refs: newFrameRefs(u), counters: []*PortCounters{{}}}
	all := w.refs.free.Len()
	var want []byte
	// rx takes a free frame, fills n bytes of it as the kernel would (at
	// the data offset) and returns its descriptor, held as the worker does.
	rx := func(n int, more bool) xdp.Desc {
		slot, ok := w.refs.free.Pop()
		if !ok {
			t.Fatal("UMEM exhausted")
		}
		d := xdp.Desc{Addr: slot + uint64(u.DataOffset()), Len: uint32(n)}
		b := u.Bytes(d.Addr, d.Len)
		for i := range b {
			b[i] = byte(len(want) + i*13)
		}
		want = append(want, b...)
		if more {
			d.Options = unix.XDP_PKT_CONTD
		}
		w.refs.hold(d.Addr)
		return d
	}
	var c chainRx
	small := rx(60, false)
	want = want[:0]
	batch := []xdp.Desc{small, rx(3840, true), rx(3840, true)}
	got := w.gather(&c, 0, batch)
	if len(got) != 1 || got[0] != small || !c.open {
		t.Fatalf("first batch: %v (chain open %v), want the 60-byte frame alone and the chain waiting", got, c.open)
	}
	tail := rx(1334, false)
	batch = []xdp.Desc{tail, rx(100, false)}
	last := batch[1]
	want = want[:len(want)-100]
	got = w.gather(&c, 0, batch)
	if len(got) != 2 || got[0].Len != 9014 || got[0].Continued() || got[1] != last || c.open {
		t.Fatalf("second batch: %v, want the 9014-byte frame whole, then the 100-byte one", got)
	}
	if string(u.Bytes(got[0].Addr, got[0].Len)) != string(want) {
		t.Error("the gathered frame differs from its pieces")
	}
	if held, out := w.refs.inFlight(); held != 3 || out != 0 || w.refs.free.Len() != all-3 {
		t.Errorf("after gathering: %d frames held, %d free of %d; want 3 held (the 60, 9014 and 100-byte frames)", held, w.refs.free.Len(), all)
	}
	// Longer than a UMEM frame (16384 − 256): five 3840-byte pieces.
	var long []xdp.Desc
	for i := range 5 {
		long = append(long, rx(3840, i < 4))
	}
	if got := w.gather(&c, 0, long); len(got) != 0 || c.open {
		t.Errorf("a 19200-byte chain: %v (open %v), want it dropped", got, c.open)
	}
	if d := w.counters[0].RX.Dropped.Load(); d != 1 {
		t.Errorf("RX dropped %d, want 1", d)
	}
	if held, _ := w.refs.inFlight(); held != 3 || w.refs.free.Len() != all-3 {
		t.Errorf("after the dropped chain: %d held, %d free; want its 5 frames freed", held, w.refs.free.Len())
	}
}

// SendJumboUDP sends count UDP datagrams of size bytes from namespace from
// to addr:port in namespace to, with DF set (IP_PMTUDISC_DO: never
// fragmented), each numbered and filled with a pattern of its number, and
// fails the test unless every one arrives once, whole and unchanged.
func SendJumboUDP(t *testing.T, from, to, addr string, port, size, count int) {
	t.Helper()
	var rx, tx int
	if err := netns.Do(to, func() error {
		var err error
		if rx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
		return unix.Bind(rx, &unix.SockaddrInet4{Port: port})
	}); err != nil {
		t.Fatalf("UDP receiver in %s: %v", to, err)
	}
	defer unix.Close(rx)
	if err := netns.Do(from, func() error {
		var err error
		if tx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		return unix.SetsockoptInt(tx, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil {
		t.Fatalf("UDP sender in %s: %v", from, err)
	}
	defer unix.Close(tx)
	var dst unix.SockaddrInet4
	if _, err := fmt.Sscanf(addr, "%d.%d.%d.%d", &dst.Addr[0], &dst.Addr[1], &dst.Addr[2], &dst.Addr[3]); err != nil {
		t.Fatal(err)
	}
	dst.Port = port
	fill := func(b []byte, seq uint32) {
		binary.BigEndian.PutUint32(b, seq)
		for i := 4; i < len(b); i++ {
			b[i] = byte(seq*131 + uint32(i)*7)
		}
	}
	seen := make([]bool, count)
	got, bad := 0, 0
	want := make([]byte, size)
	in := make([]byte, 2*size)
	// recv takes one datagram, waiting up to 2 s; false if none came.
	recv := func() bool {
		fds := []unix.PollFd{{Fd: int32(rx), Events: unix.POLLIN}}
		if n, _ := unix.Poll(fds, 2000); n <= 0 {
			return false
		}
		n, _, err := unix.Recvfrom(rx, in, unix.MSG_DONTWAIT)
		if err != nil {
			return true
		}
		seq := binary.BigEndian.Uint32(in)
		if n != size || int(seq) >= count || seen[seq] {
			bad++
			return true
		}
		fill(want, seq)
		if string(in[:n]) != string(want) {
			bad++
			return true
		}
		seen[seq] = true
		got++
		return true
	}
	buf := make([]byte, size)
	for seq := range uint32(count) {
		fill(buf, seq)
		if err := unix.Sendto(tx, buf, 0, &dst); err != nil {
			t.Fatalf("send datagram %d of %d bytes %s→%s (DF): %v", seq, size, from, to, err)
		}
		// At most 16 datagrams on the way (this path is not protected):
		// on a slow machine they wait here rather than overflow a ring on
		// the way. One that does not come is reported below.
		for int(seq)+1-(got+bad) > 16 && recv() {
		}
	}
	for got+bad < count && recv() {
	}
	if got != count || bad != 0 {
		t.Errorf("%s→%s: %d of %d datagrams of %d bytes arrived intact, %d damaged, duplicated or of the wrong size", from, to, got, count, size, bad)
	}
}
