package xdp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Error is returned by the socket operations. It names the interface and queue
// and, where the cause is known, suggests a fix. errors.Is works on the errno:
// errors.Is(err, unix.EBUSY).
type Error struct {
	Op     string // e.g. "bind AF_XDP socket to"
	Ifname string
	Queue  int
	Err    error
	Hint   string

	shared bool // the failing socket was binding with XDP_SHARED_UMEM
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s queue %d: %v", e.Op, e.Ifname, e.Queue, e.Err)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Bind reports whether the error is the kernel refusing a bind (the
// mode, the queue or the flags), as opposed to creating, sizing or mapping
// the socket.
func (e *Error) Bind() bool { return e.Op == opBind }

func hintFor(err error, what string) string {
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		return "the kernel has no AF_XDP support (CONFIG_XDP_SOCKETS)"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return "AF_XDP needs CAP_NET_RAW and CAP_NET_ADMIN: run as root"
	case what == "umem" && (errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOBUFS)):
		return "cannot pin the UMEM: raise RLIMIT_MEMLOCK (ulimit -l unlimited) or use fewer frames"
	case what == "umem" && errors.Is(err, unix.EINVAL):
		return "the kernel rejected the UMEM geometry (frame size, headroom or alignment)"
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return "out of file descriptors: raise ulimit -n"
	}
	return ""
}

func bindHint(err error, shared bool, mode BindMode, ifname string) string {
	switch {
	case errors.Is(err, unix.EBUSY):
		return "another AF_XDP socket holds this queue, or one closed on it a moment ago; close the other socket or use another queue"
	case errors.Is(err, unix.EOPNOTSUPP) && shared:
		return "the first socket of this UMEM got zero-copy but this interface has no zero-copy support; open the first socket with ModeCopy or use a separate UMEM"
	case errors.Is(err, unix.EOPNOTSUPP) && mode == ModeZeroCopy:
		return "the driver of " + ifname + " has no zero-copy AF_XDP support on this queue (veth never has); use ModeAuto or ModeCopy"
	case errors.Is(err, unix.EOPNOTSUPP):
		return "the driver of " + ifname + " does not support AF_XDP in this mode"
	case errors.Is(err, unix.EINVAL) && shared:
		return "queue does not exist (see QueueCount), or the sharing socket is not bound"
	case errors.Is(err, unix.EINVAL):
		return "queue does not exist on " + ifname + " (see QueueCount) or the bind flags are invalid"
	case errors.Is(err, unix.ENETDOWN):
		return ifname + " is down: set it up first (ip link set " + ifname + " up)"
	case errors.Is(err, unix.ENODEV):
		return "no such interface index in the socket's network namespace"
	}
	return hintFor(err, "bind")
}
