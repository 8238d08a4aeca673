package dataplane

import "runtime"

// What a preflight (linkfabric check) asks of the engine without opening a
// port: the configuration New would run with, its MTU check and the rule
// --integrity auto follows.

// Settle fills in cfg's defaults and checks what New checks before it
// opens a port, in the calling thread's network namespace (the ports'): it
// returns the configuration New would run with, with --integrity auto
// resolved, and why it resolved so ("" if it was not auto).
func Settle(cfg Config) (Config, string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cfg.defaults()
	return cfg, cfg.integrityWhy, err
}

// CheckPortMTU is New's check of host port host's MTU against link port
// link's: the link carries a full host frame with what the mode adds, and
// either port's largest frame fits a UMEM frame. c is a configuration of
// Settle. The error says the MTU needed and the command that sets it.
func (c Config) CheckPortMTU(host, link string, hostMTU, linkMTU int) error {
	c.HostPort, c.LinkPort = host, link
	return c.checkMTU(hostMTU, linkMTU)
}

// PortFCS reports whether the MAC of ifname, in the calling thread's
// network namespace, checks the Ethernet FCS (what --integrity auto
// decides on), and why.
func PortFCS(ifname string) (bool, string) { return portFCS(ifname) }

// PortDriver is ifname's driver and bus_info ('ethtool -i'), in the
// calling thread's network namespace; empty when they cannot be read.
func PortDriver(ifname string) (driver, bus string) {
	driver, bus, _ = portDriver(ifname)
	return driver, bus
}
