package netns

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SNMP reads one counter of /proc/net/snmp (proto "Tcp", "Udp", "Ip", ...)
// as a thread inside namespace ns sees it.
func SNMP(ns, proto, field string) (uint64, error) {
	var b []byte
	if err := Do(ns, func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}); err != nil {
		return 0, fmt.Errorf("snmp of %s: %w", ns, err)
	}
	v, err := SNMPField(b, proto, field)
	if err != nil {
		return 0, fmt.Errorf("snmp of %s: %w", ns, err)
	}
	return v, nil
}

// SNMPField finds proto's field in the text of /proc/net/snmp (a header line
// of names followed by a line of values, both starting with "proto:").
func SNMPField(b []byte, proto, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == field && i < len(f) {
				return strconv.ParseUint(f[i], 10, 64)
			}
		}
		return 0, fmt.Errorf("no field %s:%s", proto, field)
	}
	return 0, fmt.Errorf("no %s lines", proto)
}
