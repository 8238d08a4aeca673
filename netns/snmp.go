package netns

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SNMPAll reads every counter of /proc/net/snmp as a thread inside namespace
// ns sees it, keyed by protocol and field: "UdpInCsumErrors", "TcpRetransSegs".
func SNMPAll(ns string) (map[string]uint64, error) { return procNetCounters(ns, "snmp") }

// NetstatAll reads every counter of namespace ns's /proc/net/netstat
// (TcpExt, IpExt, ...), keyed like SNMPAll's ("TcpExtTCPLossProbes").
func NetstatAll(ns string) (map[string]uint64, error) { return procNetCounters(ns, "netstat") }

// procNetCounters parses /proc/net/NAME (lines of names and of values per
// protocol) as a thread inside namespace ns sees it.
func procNetCounters(ns, name string) (map[string]uint64, error) {
	var b []byte
	if err := Do(ns, func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/" + name)
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", name, ns, err)
	}
	return ParseSNMP(b), nil
}

// SNMP reads one counter of /proc/net/snmp (proto "Tcp", "Udp", "Ip", ...)
// of namespace ns.
func SNMP(ns, proto, field string) (uint64, error) {
	m, err := SNMPAll(ns)
	if err != nil {
		return 0, err
	}
	v, ok := m[proto+field]
	if !ok {
		return 0, fmt.Errorf("snmp of %s: no counter %s:%s", ns, proto, field)
	}
	return v, nil
}

// ParseSNMP parses the text of /proc/net/snmp: for each protocol a line of
// names and a line of values, both starting with "Proto:".
func ParseSNMP(b []byte) map[string]uint64 {
	m := map[string]uint64{}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if names == nil || names[0] != f[0] {
			names = f
			continue
		}
		for i := 1; i < len(f) && i < len(names); i++ {
			if v, err := strconv.ParseUint(f[i], 10, 64); err == nil {
				m[strings.TrimSuffix(f[0], ":")+names[i]] = v
			}
		}
		names = nil
	}
	return m
}
