package bed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// TrafgenConfig is one run of netsniff-ng's trafgen (a generator outside
// the project): one frame sent over and over on a host's interface.
type TrafgenConfig struct {
	NS, Dev  string // namespace (full name) and interface
	Dst, Src net.HardwareAddr
	// Len is the frame's length without FCS, at least 60. Its EtherType is
	// 0x88B6 (IEEE local experimental): the receiving host counts and
	// drops it.
	Len int
	// Rate is trafgen's -b limit in frames/s (it delivers about half of
	// it here: compare arms at the same setting); 0 sends as fast as one
	// CPU can.
	Rate     int
	Duration time.Duration
}

// trafgenEtherType is the EtherType of the generated frames.
const trafgenEtherType = 0x88B6

// CheckTrafgen fails with the fix when trafgen is not installed.
func CheckTrafgen() error {
	if _, err := exec.LookPath("trafgen"); err != nil {
		return errors.New("trafgen (Debian package netsniff-ng) is not installed: run scripts/deps.sh as root, or apt-get install netsniff-ng")
	}
	return nil
}

// trafgenPacket is trafgen's packet description of the frame.
func (c TrafgenConfig) trafgenPacket() string {
	var b strings.Builder
	b.WriteString("{ ")
	for _, x := range append(append([]byte{}, c.Dst...), c.Src...) {
		fmt.Fprintf(&b, "0x%02x, ", x)
	}
	fmt.Fprintf(&b, "c16(0x%04x), fill(0x00, %d) }", trafgenEtherType, c.Len-14)
	return b.String()
}

// Trafgen runs trafgen on one CPU for c.Duration (then SIGINT), without
// touching the system's socket memory or IRQ affinity. A trafgen that
// exits early because flushing its TX ring got EAGAIN (below) is started
// again for the time left, at most trafgenRestarts times: the interface's
// counters, which the experiments read, lose the few milliseconds of the
// restart and nothing else.
func Trafgen(ctx context.Context, c TrafgenConfig) error {
	if c.Len < 60 || len(c.Dst) != 6 || len(c.Src) != 6 {
		return fmt.Errorf("trafgen: frame of %d bytes from %v to %v: want at least 60 bytes and two MACs", c.Len, c.Src, c.Dst)
	}
	end := time.Now().Add(c.Duration)
	for restarts := 0; ; restarts++ {
		c.Duration = time.Until(end)
		err := trafgenOnce(ctx, c)
		if !errors.Is(err, errTrafgenFlush) || restarts == trafgenRestarts {
			return err
		}
		if time.Until(end) <= 0 {
			return nil
		}
	}
}

// trafgenRestarts bounds Trafgen's restarts after a failed TX ring flush.
const trafgenRestarts = 3

// errTrafgenFlush: trafgen exited on EAGAIN flushing its TX ring.
var errTrafgenFlush = errors.New("trafgen could not flush its TX ring")

// trafgenOnce runs trafgen once for c.Duration.
func trafgenOnce(ctx context.Context, c TrafgenConfig) error {
	// The qdisc path (--qdisc-path): a veth whose peer's receive ring is
	// full stops its queue (kernel 6.18), and trafgen's default path past the
	// qdisc then gets EAGAIN flushing its TX ring and exits (1 run in 3-12
	// at saturation into a cells edge); through the qdisc such a frame is
	// dropped before the device counts it, and trafgen goes on, but not
	// always: it still exits so now and then (a few runs in a hundred).
	args := []string{"--dev", c.Dev, "--cpus", "1", "--no-sock-mem", "--notouch-irq", "--no-cpu-stats", "--qdisc-path"}
	if c.Rate > 0 {
		args = append(args, "--rate", fmt.Sprintf("%dpps", c.Rate))
	}
	args = append(args, c.trafgenPacket())
	// Its own process group, stopped as a whole: trafgen's worker is a
	// child that only a signal to the group stops.
	cmd := netns.Command(context.Background(), c.NS, "trafgen", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("trafgen in %s: %w", c.NS, err)
	}
	pg := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		syscall.Kill(-pg, syscall.SIGKILL)
		if strings.Contains(out.String(), "Flushing TX_RING failed: Resource temporarily unavailable") {
			err = fmt.Errorf("%w: %w", errTrafgenFlush, err)
		}
		return fmt.Errorf("trafgen in %s exited early (%w): %s", c.NS, err, LastLines([]byte(out.String()), 5))
	case <-ctx.Done():
	case <-time.After(c.Duration):
	}
	syscall.Kill(-pg, syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		syscall.Kill(-pg, syscall.SIGKILL)
		<-done
	}
	return ctx.Err()
}
