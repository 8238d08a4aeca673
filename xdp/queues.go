package xdp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifIndex resolves ifname in the network namespace of the calling thread.
func ifIndex(ifname string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	Cmd           uint32
	MaxRx         uint32
	MaxTx         uint32
	MaxOther      uint32
	MaxCombined   uint32
	RxCount       uint32
	TxCount       uint32
	OtherCount    uint32
	CombinedCount uint32
}

// ifreqData is struct ifreq with the ifr_data member.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// QueueCount returns the number of receive queues of ifname (one AF_XDP socket
// each), as seen from the calling thread's network namespace: rx + combined
// channels from the ETHTOOL_GCHANNELS ioctl, or the number of
// /sys/class/net/IFNAME/queues/rx-* entries if the driver has no such ioctl.
func QueueCount(ifname string) (int, error) { return queueCount(ifname, "rx") }

// TxQueueCount returns the number of transmit queues of ifname: tx +
// combined channels from ETHTOOL_GCHANNELS, or the number of
// /sys/class/net/IFNAME/queues/tx-* entries. A socket bound to a queue at
// or above it can receive but should not transmit (a NIC with more RX than
// TX queues).
func TxQueueCount(ifname string) (int, error) { return queueCount(ifname, "tx") }

// queueCount counts ifname's queues of one direction ("rx" or "tx").
func queueCount(ifname, dir string) (int, error) {
	if len(ifname) >= unix.IFNAMSIZ {
		return 0, fmt.Errorf("count queues of %s: interface name too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("count queues of %s: %w", ifname, err)
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{Cmd: unix.ETHTOOL_GCHANNELS}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&ch)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e == 0 {
		n := ch.RxCount
		if dir == "tx" {
			n = ch.TxCount
		}
		if n := int(n + ch.CombinedCount); n > 0 {
			return n, nil
		}
	} else if e == unix.ENODEV {
		return 0, fmt.Errorf("count queues of %s: %w (no such interface in this network namespace)", ifname, e)
	}
	// No ETHTOOL_GCHANNELS (or it reported nothing): sysfs. Note that sysfs
	// shows the namespace it was mounted in, which may not be the caller's.
	m, err := filepath.Glob(filepath.Join("/sys/class/net", ifname, "queues", dir+"-*"))
	if err == nil && len(m) > 0 {
		return len(m), nil
	}
	if _, serr := os.Stat(filepath.Join("/sys/class/net", ifname)); serr != nil && e != 0 {
		return 0, fmt.Errorf("count queues of %s: ethtool: %w; sysfs: %w", ifname, e, serr)
	}
	return 1, nil
}

// OpenAll opens one socket per receive queue of ifname (QueueCount), all
// sharing u. Socket i is bound to queue i. On error the sockets opened so far
// are closed.
func (u *Umem) OpenAll(ifname string, cfg SocketConfig) ([]*Socket, error) {
	n, err := QueueCount(ifname)
	if err != nil {
		return nil, err
	}
	socks := make([]*Socket, 0, n)
	for q := range n {
		s, err := u.Open(ifname, q, cfg)
		if err != nil {
			var errs []error
			for _, o := range socks {
				errs = append(errs, o.Close())
			}
			return nil, errors.Join(append([]error{err}, errs...)...)
		}
		socks = append(socks, s)
	}
	return socks, nil
}
