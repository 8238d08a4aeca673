package netns

import "golang.org/x/sys/unix"

// Offloads are the offloads of a device that matter to the dataplane.
type Offloads struct {
	TxChecksum, GRO, LRO bool
}

// ethFlagLRO is ETH_FLAG_LRO of ETHTOOL_GFLAGS (linux/ethtool.h).
const ethFlagLRO = 1 << 15

// OffloadsHere reads dev's TX checksum offload, GRO and LRO in the
// calling thread's network namespace (SIOCETHTOOL, as 'ethtool -k' shows
// them); a device without the ioctl reports them off.
func OffloadsHere(dev string) (Offloads, error) {
	var o Offloads
	tx, err := ethtoolValueIoctl(dev, unix.ETHTOOL_GTXCSUM, 0)
	if err != nil && err != unix.EOPNOTSUPP {
		return o, err
	}
	gro, err := ethtoolValueIoctl(dev, unix.ETHTOOL_GGRO, 0)
	if err != nil && err != unix.EOPNOTSUPP {
		return o, err
	}
	flags, err := ethtoolValueIoctl(dev, unix.ETHTOOL_GFLAGS, 0)
	if err != nil && err != unix.EOPNOTSUPP {
		return o, err
	}
	return Offloads{TxChecksum: tx != 0, GRO: gro != 0, LRO: flags&ethFlagLRO != 0}, nil
}
