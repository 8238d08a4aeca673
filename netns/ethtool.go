package netns

import (
	"context"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with the ifr_data member of the union.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte // rest of the union
}

// ethtoolValueIoctl runs one SIOCETHTOOL get/set of an ethtool_value on dev
// in the calling thread's network namespace.
func ethtoolValueIoctl(dev string, cmd, in uint32) (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	v := &ethtoolValue{cmd: cmd, data: in}
	ifr := &ifreqData{data: unsafe.Pointer(v)}
	copy(ifr.name[:], dev)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
	runtime.KeepAlive(ifr)
	runtime.KeepAlive(v)
	if errno != 0 {
		return 0, errno
	}
	return v.data, nil
}

// TxChecksum reports whether TX checksum offload is on for dev in namespace
// ns (ETHTOOL_GTXCSUM).
func TxChecksum(ns, dev string) (on bool, err error) {
	err = Do(ns, func() error {
		v, err := ethtoolValueIoctl(dev, unix.ETHTOOL_GTXCSUM, 0)
		on = v != 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("netns %s: reading tx checksum offload of %s: %w", ns, dev, err)
	}
	return on, nil
}

// SetTxChecksum turns TX checksum offload of dev in namespace ns on or off
// with the ETHTOOL_STXCSUM ioctl, falling back to "ethtool -K dev tx on|off".
// GSO is left alone (software GSO still works without checksum offload).
func SetTxChecksum(ns, dev string, on bool) error {
	var want uint32
	if on {
		want = 1
	}
	ioErr := Do(ns, func() error {
		if _, err := ethtoolValueIoctl(dev, unix.ETHTOOL_STXCSUM, want); err != nil {
			return err
		}
		got, err := ethtoolValueIoctl(dev, unix.ETHTOOL_GTXCSUM, 0)
		if err != nil {
			return err
		}
		if (got != 0) != on {
			return fmt.Errorf("tx checksum still %v after ETHTOOL_STXCSUM", got != 0)
		}
		return nil
	})
	if ioErr == nil {
		return nil
	}
	arg := "off"
	if on {
		arg = "on"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := Command(ctx, ns, "ethtool", "-K", dev, "tx", arg).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns %s: turning tx checksum offload %s on %s: ioctl: %v; ethtool: %v: %s (install ethtool, or check the device supports it)", ns, arg, dev, ioErr, err, out)
	}
	return nil
}
