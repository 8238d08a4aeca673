package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// XDPFeatures are the XDP capabilities a device advertises (the netdev
// netlink family's xdp-features, enum netdev_xdp_act; Linux 6.3+).
type XDPFeatures uint64

// XDP feature bits.
const (
	XDPBasic     XDPFeatures = 1 << iota // runs XDP programs: PASS, DROP, TX
	XDPRedirect                          // its XDP programs may redirect
	XDPNdoXmit                           // accepts frames redirected into it (ndo_xdp_xmit)
	XDPZeroCopy                          // AF_XDP zero-copy
	XDPHWOffload                         // offloads programs to the NIC
	XDPRxSG                              // multi-buffer receive
	XDPNdoXmitSG                         // accepts multi-buffer frames redirected into it
)

// AcceptsRedirect reports whether frames may be redirected into the device.
// A veth accepts them only while its peer can take them: an XDP program or
// GRO on the peer (the kernel updates the flag as the peer changes).
func (f XDPFeatures) AcceptsRedirect() bool { return f&XDPNdoXmit != 0 }

func (f XDPFeatures) String() string {
	names := []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}
	var out []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// netdev generic netlink family (include/uapi/linux/netdev.h).
const (
	netdevFamily          = "netdev"
	netdevCmdDevGet       = 1
	netdevAttrIfindex     = 1
	netdevAttrXDPFeatures = 3
)

// FeatureReader reads devices' XDP features through a netlink socket opened
// in the network namespace of the thread that created it; it keeps reading
// that namespace from any goroutine. Not safe for concurrent use.
type FeatureReader struct {
	fd     int
	family uint16
	seq    uint32
	buf    []byte
}

// NewFeatureReader opens a reader in the calling thread's network namespace.
func NewFeatureReader() (*FeatureReader, error) {
	fam, err := netlink.GenlFamilyGet(netdevFamily)
	if err != nil {
		return nil, fmt.Errorf("netlink family %q (device XDP features, Linux 6.3+): %w", netdevFamily, err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == nil {
			// Never wait for ever on a kernel that does not answer.
			err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open a generic netlink socket in %s: %w", netnsDesc(), err)
	}
	return &FeatureReader{fd: fd, family: fam.ID, buf: make([]byte, 8192)}, nil
}

// Features returns the XDP features of the device with index ifindex.
func (r *FeatureReader) Features(ifindex int) (XDPFeatures, error) {
	f, err := r.features(ifindex)
	if err != nil {
		return 0, fmt.Errorf("read XDP features of ifindex %d: %w", ifindex, err)
	}
	return f, nil
}

func (r *FeatureReader) features(ifindex int) (XDPFeatures, error) {
	if r.fd < 0 {
		return 0, errors.New("reader closed")
	}
	r.seq++
	// nlmsghdr, genlmsghdr, one u32 attribute.
	req := make([]byte, unix.NLMSG_HDRLEN+4+8)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], r.family)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], r.seq)
	req[16], req[17] = netdevCmdDevGet, 1
	ne.PutUint16(req[20:], 8)
	ne.PutUint16(req[22:], netdevAttrIfindex)
	ne.PutUint32(req[24:], uint32(ifindex))
	if err := unix.Sendto(r.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	for {
		n, _, err := unix.Recvfrom(r.fd, r.buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return 0, err
		}
		msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
		if err != nil {
			return 0, err
		}
		for _, m := range msgs {
			if m.Header.Seq != r.seq {
				continue // an answer to an earlier request that gave up
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(ne.Uint32(m.Data)); errno != 0 {
						return 0, syscall.Errno(-errno)
					}
				}
				return 0, errors.New("the kernel acknowledged without an answer")
			case r.family:
				return parseFeatures(m.Data)
			}
		}
	}
}

// parseFeatures finds the xdp-features attribute in a DEV_GET answer (its
// genlmsghdr and attributes).
func parseFeatures(b []byte) (XDPFeatures, error) {
	if len(b) < 4 {
		return 0, errors.New("short answer")
	}
	b = b[4:]
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l, typ := int(ne.Uint16(b)), ne.Uint16(b[2:])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(b) {
			return 0, errors.New("malformed attribute")
		}
		if typ == netdevAttrXDPFeatures && l == 12 {
			return XDPFeatures(ne.Uint64(b[4:])), nil
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return 0, errors.New("the kernel's answer has no xdp-features")
}

// Close releases the socket.
func (r *FeatureReader) Close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}
