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
	return ethtoolFlag(ns, dev, "tx checksum offload", unix.ETHTOOL_GTXCSUM)
}

// GRO reports whether generic receive offload is on for dev in namespace ns
// (ETHTOOL_GGRO).
func GRO(ns, dev string) (on bool, err error) {
	return ethtoolFlag(ns, dev, "GRO", unix.ETHTOOL_GGRO)
}

// ethtoolFlag reads an on/off feature of dev with its get ioctl.
func ethtoolFlag(ns, dev, what string, get uint32) (on bool, err error) {
	err = Do(ns, func() error {
		v, err := ethtoolValueIoctl(dev, get, 0)
		on = v != 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("netns %s: reading %s of %s: %w", ns, what, dev, err)
	}
	return on, nil
}

// SetTxChecksum turns TX checksum offload of dev in namespace ns on or off
// with the ETHTOOL_STXCSUM ioctl, falling back to "ethtool -K dev tx on|off".
// GSO is left alone (software GSO still works without checksum offload).
func SetTxChecksum(ns, dev string, on bool) error {
	return setEthtoolFlag(ns, dev, "tx", "tx checksum offload", unix.ETHTOOL_GTXCSUM, unix.ETHTOOL_STXCSUM, on)
}

// SetGRO turns generic receive offload of dev in namespace ns on or off
// with the ETHTOOL_SGRO ioctl, falling back to "ethtool -K dev gro on|off".
func SetGRO(ns, dev string, on bool) error {
	return setEthtoolFlag(ns, dev, "gro", "GRO", unix.ETHTOOL_GGRO, unix.ETHTOOL_SGRO, on)
}

// setEthtoolFlag sets an on/off feature of dev with its set ioctl, checks it
// with the get ioctl, and falls back to "ethtool -K dev key on|off".
func setEthtoolFlag(ns, dev, key, what string, get, set uint32, on bool) error {
	var want uint32
	if on {
		want = 1
	}
	ioErr := Do(ns, func() error {
		if _, err := ethtoolValueIoctl(dev, set, want); err != nil {
			return err
		}
		got, err := ethtoolValueIoctl(dev, get, 0)
		if err != nil {
			return err
		}
		if (got != 0) != on {
			return fmt.Errorf("%s still %v after setting it", what, got != 0)
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
	out, err := Command(ctx, ns, "ethtool", "-K", dev, key, arg).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns %s: turning %s %s on %s: ioctl: %v; ethtool: %v: %s (install ethtool, or check the device supports it)", ns, what, arg, dev, ioErr, err, out)
	}
	return nil
}
