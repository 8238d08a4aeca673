package xdp

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTxChain: a packet within one chunk is one descriptor; a longer one is
// cut at chunk boundaries, XDP_PKT_CONTD on all but the last, covering the
// packet exactly.
func TestTxChain(t *testing.T) {
	u := &Umem{frameSize: 16384, chunkSize: 4096, frameShift: 14}
	if !u.MultiBuffer() || u.MaxRxLen() != 3840 || u.MaxChain() != 4 {
		t.Fatalf("16 KiB frames of 4 KiB chunks: multi-buffer %v, MaxRxLen %d, MaxChain %d; want true, 3840, 4", u.MultiBuffer(), u.MaxRxLen(), u.MaxChain())
	}
	base := uint64(3 * 16384)
	for _, tc := range []struct {
		addr uint64
		n    uint32
		want []Desc
	}{
		{base + 256, 60, []Desc{{base + 256, 60, 0}}},
		{base + 256, 3840, []Desc{{base + 256, 3840, 0}}},
		{base + 256, 3841, []Desc{{base + 256, 3840, unix.XDP_PKT_CONTD}, {base + 4096, 1, 0}}},
		{base + 256, 9014, []Desc{{base + 256, 3840, unix.XDP_PKT_CONTD}, {base + 4096, 4096, unix.XDP_PKT_CONTD}, {base + 8192, 1078, 0}}},
		{base + 16384 - 4096 - 100, 200, []Desc{{base + 16384 - 4096 - 100, 100, unix.XDP_PKT_CONTD}, {base + 16384 - 4096, 100, 0}}},
		{base + 256, 16384 - 256, []Desc{{base + 256, 3840, 1}, {base + 4096, 4096, 1}, {base + 8192, 4096, 1}, {base + 12288, 4096, 0}}},
	} {
		got := u.TxChain(nil, tc.addr, tc.n)
		if len(got) != len(tc.want) {
			t.Errorf("TxChain(%d, %d) = %v, want %v", tc.addr, tc.n, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] || got[i].Continued() != (i < len(got)-1) {
				t.Errorf("TxChain(%d, %d) = %v, want %v", tc.addr, tc.n, got, tc.want)
				break
			}
		}
		if len(got) > u.MaxChain() {
			t.Errorf("TxChain(%d, %d): %d descriptors, above MaxChain %d", tc.addr, tc.n, len(got), u.MaxChain())
		}
	}
	small := &Umem{frameSize: 4096, chunkSize: 4096, frameShift: 12}
	if small.MultiBuffer() || small.MaxChain() != 1 || len(small.TxChain(nil, 256, 3840)) != 1 {
		t.Errorf("4 KiB frames: multi-buffer %v, MaxChain %d", small.MultiBuffer(), small.MaxChain())
	}
	if _, err := NewUmem(UmemConfig{FrameSize: 12288, FrameCount: 4}); err == nil {
		t.Error("a frame size that is not a power of two was accepted")
	}
}

// TestIntegrationMultiBuffer: on a UMEM of 16 KiB frames (4 KiB kernel
// chunks, XDP_USE_SG) over a veth pair of MTU 9000 with a frags program,
// packets up to 9014 bytes arrive as chains of descriptors that reassemble
// to what was sent, and a packet cut by TxChain leaves whole, from the
// registering socket and from one sharing its UMEM (which inherits SG).
func TestIntegrationMultiBuffer(t *testing.T) {
	n := newTestNSNamed(t, "lfjbx")
	a, b := n.veth("lfjbxa", "lfjbxb", 1)
	for _, ifc := range []string{"lfjbxa", "lfjbxb"} {
		l, err := n.h.LinkByName(ifc)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.h.LinkSetMTU(l, 9000); err != nil {
			t.Fatalf("MTU 9000 on %s: %v", ifc, err)
		}
	}
	mb := attachRedirectFlags(t, b.Index, unix.BPF_F_XDP_HAS_FRAGS)

	u, err := NewUmem(UmemConfig{FrameSize: 16384, FrameCount: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if !u.MultiBuffer() || u.ChunkSize() != 4096 {
		t.Fatalf("16 KiB frames: multi-buffer %v, chunk %d", u.MultiBuffer(), u.ChunkSize())
	}
	cfg := SocketConfig{RxSize: 64, TxSize: 64, FillSize: 64, CompletionSize: 64, Mode: ModeCopy}
	sb, err := u.Open("lfjbxb", 0, cfg)
	if err != nil {
		t.Fatalf("bind with XDP_USE_SG: %v", err)
	}
	sa, err := u.Open("lfjbxa", 0, SocketConfig{RxSize: 64, TxSize: 64, FillSize: 64, CompletionSize: 64})
	if err != nil {
		t.Fatalf("shared socket on a multi-buffer UMEM: %v", err)
	}
	if err := mb.Put(uint32(0), uint32(sb.FD())); err != nil {
		t.Fatal(err)
	}
	free := u.NewFreeList()
	addrs := make([]uint64, 48)
	k := free.PopN(addrs)
	if sb.Fill(addrs[:k]) != k {
		t.Fatal("initial fill")
	}
	pa := openPacket(t, a.Index)

	descs := make([]Desc, 16)
	// receive gathers the test packet seq from sb: its chain, reassembled
	// (other packets, such as IPv6 neighbour discovery, are skipped).
	receive := func(seq uint32) ([]byte, []Desc) {
		t.Helper()
		var pkt []byte
		var chain []Desc
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			got := sb.Receive(descs[:1])
			if got == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			d := descs[0]
			chain = append(chain, d)
			pkt = append(pkt, u.Bytes(d.Addr, d.Len)...)
			addrs[0] = u.FrameBase(d.Addr)
			sb.Fill(addrs[:1])
			if d.Continued() {
				continue
			}
			if got, ok := frameSeq(pkt); ok && got == seq {
				return pkt, chain
			}
			pkt, chain = nil, nil
		}
		t.Fatalf("test packet %d not received whole on lfjbxb within 2 s (chain so far %v)", seq, chain)
		return nil, nil
	}
	for seq, size := range []int{60, 3840, 3841, 5000, 9014} {
		f := testFrame(b.HardwareAddr, a.HardwareAddr, uint32(seq), size)
		pa.send(f)
		pkt, chain := receive(uint32(seq))
		want := (size-1)/3840 + 1
		if !bytes.Equal(pkt, f) || len(chain) != want {
			t.Errorf("%d-byte frame: %d bytes in %d descriptors %v, want the frame in %d", size, len(pkt), len(chain), chain, want)
		}
		for i, d := range chain {
			if d.Len > u.MaxRxLen() || d.Continued() != (i < len(chain)-1) {
				t.Errorf("%d-byte frame: descriptor %d of %v", size, i, chain)
			}
		}
	}

	// Transmit a contiguous 9014-byte packet cut by TxChain, from both sockets.
	for _, tc := range []struct {
		s    *Socket
		name string
	}{{sb, "registering"}, {sa, "sharing"}} {
		slot, _ := free.Pop()
		addr := slot + uint64(u.DataOffset())
		var f []byte
		if tc.s == sb {
			f = testFrame(a.HardwareAddr, b.HardwareAddr, 100, 9014)
		} else {
			f = testFrame(b.HardwareAddr, a.HardwareAddr, 101, 9014)
		}
		copy(u.Frame(addr), f)
		chain := u.TxChain(nil, addr, uint32(len(f)))
		if tc.s.Transmit(chain) != len(chain) {
			t.Fatal("TX ring full")
		}
		if err := tc.s.Kick(); err != nil {
			t.Fatal(err)
		}
		var got []byte
		if tc.s == sb {
			for deadline := time.Now().Add(2 * time.Second); got == nil && time.Now().Before(deadline); {
				if r := pa.recv(100 * time.Millisecond); r != nil {
					if seq, ok := frameSeq(r); ok && seq == 100 {
						got = r
					}
				}
			}
		} else {
			got, _ = receive(101)
		}
		if !bytes.Equal(got, f) {
			t.Errorf("%s socket: transmitted a 9014-byte chain of %d, received %d bytes (equal %v)", tc.name, len(chain), len(got), bytes.Equal(got, f))
		}
		comp := make([]uint64, 8)
		done := 0
		for deadline := time.Now().Add(time.Second); done < len(chain) && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			m := tc.s.Complete(comp[done:])
			for _, c := range comp[done : done+m] {
				if u.FrameBase(c) != slot {
					t.Errorf("%s socket: completion %d outside the transmitted slot %d", tc.name, c, slot)
				}
			}
			done += m
		}
		if done != len(chain) {
			t.Errorf("%s socket: %d completions for a chain of %d", tc.name, done, len(chain))
		}
	}
	st, _ := sb.Stats()
	if st.RxDropped != 0 || st.TxInvalidDescs != 0 {
		t.Errorf("socket statistics %+v: want no drops, no invalid descriptors", st)
	}
}
