package rawio

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"golang.org/x/sys/unix"
)

func cmsg(sec, nsec int64) []byte {
	b := make([]byte, unix.SizeofCmsghdr+16)
	binary.NativeEndian.PutUint64(b, uint64(len(b)))
	binary.NativeEndian.PutUint32(b[8:], unix.SOL_SOCKET)
	binary.NativeEndian.PutUint32(b[12:], unix.SO_TIMESTAMPNS)
	binary.NativeEndian.PutUint64(b[16:], uint64(sec))
	binary.NativeEndian.PutUint64(b[24:], uint64(nsec))
	return b
}

func TestStamp(t *testing.T) {
	got := Stamp(cmsg(5, 7))
	if want := clock.FromRealtime(5_000_000_007); got != want {
		t.Fatalf("Stamp = %d, want %d", got, want)
	}
	b := cmsg(5, 7)
	binary.NativeEndian.PutUint32(b[12:], unix.SO_TIMESTAMP)
	if Stamp(b) != 0 {
		t.Error("another cmsg type read as SO_TIMESTAMPNS")
	}
}

// FuzzStamp: Stamp never panics on a malformed control buffer.
func FuzzStamp(f *testing.F) {
	f.Add(cmsg(1, 2))
	f.Add(cmsg(1, 2)[:20])
	f.Fuzz(func(t *testing.T, in []byte) { Stamp(in) })
}
