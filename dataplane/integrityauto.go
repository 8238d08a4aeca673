package dataplane

import (
	"fmt"
	"slices"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"golang.org/x/sys/unix"
)

// autoTrailer is what --integrity auto puts on a link without an FCS check:
// the Internet checksum and the length. Measured on the veth pair
// (docs/results.md, "The integrity trailer"): lg's goodput with both halves
// in the kernel 0.80x forward's with it against 0.52x with CRC32C, whose table
// XDP computes at 786 against 140 ns for a 1514-byte frame; and on veth
// nothing corrupts a frame but the impairment's bit flips, every one of
// which the checksum sees (it misses only errors that cancel in a 16-bit
// sum, as the hosts' own TCP and UDP checksums do).
const autoTrailer = linkcrc.Csum

// virtualDrivers are drivers whose frames never cross a wire with an FCS
// of their own: software interfaces (some of which fill in a bus_info:
// tun's "tap", a bridge's "N/A") and VMs' paravirtual NICs, which sit on a
// bus. A trailer, as on veth.
var virtualDrivers = []string{"veth", "tun", "bridge", "bonding", "team", "macvlan", "ipvlan", "vxlan", "geneve",
	"dummy", "ifb", "netkit", "openvswitch", "virtio_net", "vif", "hv_netvsc", "vmxnet3"}

// portFCS reports whether the MAC of ifname (in the calling thread's
// network namespace) checks the Ethernet FCS, and what it is: a device on
// a bus (ethtool's bus_info, as 'ethtool -i' shows it) whose driver is not
// one of virtualDrivers.
func portFCS(ifname string) (bool, string) {
	driver, bus, err := portDriver(ifname)
	if err != nil {
		return false, err.Error()
	}
	return driverFCS(driver, bus)
}

// portDriver is ifname's driver and bus_info, as 'ethtool -i' shows them
// (in the calling thread's network namespace).
func portDriver(ifname string) (driver, bus string, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", "", fmt.Errorf("cannot ask for %s's driver: %w", ifname, err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	if err != nil {
		return "", "", fmt.Errorf("cannot read %s's driver (ethtool -i): %w", ifname, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), unix.ByteSliceToString(info.Bus_info[:]), nil
}

// driverFCS is portFCS's rule for a driver and its bus_info.
func driverFCS(driver, bus string) (bool, string) {
	switch {
	case slices.Contains(virtualDrivers, driver):
		return false, fmt.Sprintf("driver %s: a virtual or paravirtual interface, no FCS on its path", driver)
	case bus == "" || bus == "N/A":
		return false, fmt.Sprintf("driver %s, no bus device: a virtual interface, no FCS on its path", driver)
	}
	return true, fmt.Sprintf("driver %s at %s: its MAC checks the Ethernet FCS", driver, bus)
}

// autoIntegrity is what --integrity auto resolves to on link ports links:
// off when every one's MAC checks the FCS (fcs), else autoTrailer; and
// why, naming the port that decided. Both ends of a veth pair resolve it
// the same way (both are veth), as do two NICs on one fibre.
func autoIntegrity(links []string, fcs func(string) (bool, string)) (linkcrc.Integrity, string) {
	why := ""
	for _, l := range links {
		ok, what := fcs(l)
		if !ok {
			return autoTrailer, fmt.Sprintf("%s: %s; %s is the trailer that costs the kernel path least", l, what, autoTrailer)
		}
		if why == "" {
			why = fmt.Sprintf("%s: %s", l, what)
		}
	}
	return linkcrc.Off, why
}

// resolveIntegrity turns --integrity auto into what the link ports need
// (autoIntegrity), in the calling thread's network namespace, and keeps
// why for New's log line. A mode without the link header (Spec.Wire:
// forward) checks nothing and keeps auto.
func (c *Config) resolveIntegrity() {
	if c.Link.Integrity != linkcrc.Auto || !c.spec().Wire {
		return
	}
	c.Link.Integrity, c.integrityWhy = autoIntegrity(c.LinkPorts, portFCS)
}
