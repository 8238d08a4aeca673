package nfq

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

const statsPath = "/proc/thread-self/net/netfilter/nfnetlink_queue"

// TestQueueHoldsAndReleasesUDP (root): in a namespace of its own, an
// iptables-legacy NFQUEUE rule (--queue-bypass) sends a UDP flow on lo to
// our queue. While we hold the packets nothing arrives; one verdict and
// then a batch verdict release them all, in order, with no queue or user
// drops; after Close the bypass lets traffic through.
func TestQueueHoldsAndReleasesUDP(t *testing.T) {
	netns.RequireRoot(t)
	ipt, err := exec.LookPath("iptables-legacy")
	if err != nil {
		t.Skip("iptables-legacy not on PATH (scripts/deps.sh installs the iptables package)")
	}
	ns := "lft" + strconv.FormatInt(int64(os.Getpid()), 36) + "nfq"
	run := func(args ...string) error {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %v: %s", args, err, bytes.TrimSpace(out))
		}
		return nil
	}
	if err := run("ip", "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run("ip", "netns", "del", ns); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := run("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	const qnum, port = 7, 9299
	rule := []string{"OUTPUT", "-o", "lo", "-p", "udp", "--dport", strconv.Itoa(port), "-j", "NFQUEUE", "--queue-num", strconv.Itoa(qnum), "--queue-bypass"}
	if err := run(append([]string{"ip", "netns", "exec", ns, ipt, "-A"}, rule...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the namespace goes (cleanups run last first)
		if err := run(append([]string{"ip", "netns", "exec", ns, ipt, "-D"}, rule...)...); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	var (
		q      *Queue
		rx, tx *net.UDPConn
		dst    = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	)
	err = netns.Do(ns, func() error {
		var err error
		if q, err = Open(Config{Num: qnum, Copy: CopyPacket, Range: 64, MaxLen: 4096, Flags: FlagFailOpen}); err != nil {
			return err
		}
		if rx, err = net.ListenUDP("udp4", dst); err != nil {
			return err
		}
		tx, err = net.DialUDP("udp4", nil, dst)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	defer tx.Close()
	closed := false
	defer func() {
		if !closed {
			q.Close()
		}
	}()
	stats := func() Stats {
		var s Stats
		if err := netns.Do(ns, func() error {
			var err error
			s, err = ReadStats(statsPath, qnum)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := q.SetReadTimeout(2 * time.Second); err != nil {
		t.Fatal(err)
	}

	const n = 20
	for i := 0; i < n; i++ {
		if _, err := tx.Write([]byte{byte(i), 'x', 'y', 'z'}); err != nil {
			t.Fatal(err)
		}
	}
	var pkts []Packet
	for len(pkts) < n {
		if pkts, err = q.Receive(pkts); err != nil {
			t.Fatalf("after %d of %d packets: %v", len(pkts), n, err)
		}
	}
	for i, p := range pkts {
		if i > 0 && p.ID != pkts[i-1].ID+1 {
			t.Fatalf("ids %d then %d", pkts[i-1].ID, p.ID)
		}
		if len(p.Payload) < 28 || p.Payload[9] != unix.IPPROTO_UDP || !bytes.Equal(p.Payload[16:20], []byte{127, 0, 0, 1}) ||
			int(p.Payload[22])<<8|int(p.Payload[23]) != port || p.Len != 20+8+4 {
			t.Fatalf("packet %d: %+v", i, p)
		}
	}
	if s := stats(); s.Total != n {
		t.Fatalf("kernel holds %d packets, want %d", s.Total, n)
	}
	// Held: nothing reaches the receiver.
	buf := make([]byte, 64)
	rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if m, err := rx.Read(buf); err == nil {
		t.Fatalf("received %d bytes while the queue held the flow", m)
	}
	// Release: the first alone, the rest in one batch.
	if err := q.Verdict(pkts[0].ID, Accept); err != nil {
		t.Fatal(err)
	}
	if err := q.VerdictBatch(pkts[n-1].ID, Accept); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, err := rx.Read(buf)
		if err != nil {
			t.Fatalf("datagram %d of %d after release: %v", i, n, err)
		}
		if m != 4 || buf[0] != byte(i) {
			t.Fatalf("datagram %d: % x", i, buf[:m])
		}
	}
	s := stats()
	if s.Total != 0 || s.QueueDropped != 0 || s.UserDropped != 0 {
		t.Fatalf("after release: %+v", s)
	}
	t.Logf("stats after release: %+v", s)

	// Unbound: --queue-bypass lets the flow through at once.
	closed = true
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	tx.Write([]byte{0xEE})
	rx.SetReadDeadline(time.Now().Add(2 * time.Second))
	if m, err := rx.Read(buf); err != nil || m != 1 || buf[0] != 0xEE {
		t.Fatalf("after close: %d % x %v (want the bypass to pass it)", m, buf[:max(m, 0)], err)
	}
}
