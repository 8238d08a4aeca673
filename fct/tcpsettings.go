package fct

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TCPSettings are the per-namespace TCP knobs of the paper's methodology
// (§4: SACK, RACK-TLP, RTO_min 1 ms; the LinkGuardian artifact additionally
// disables metrics caching and timestamps). Each int field is written to the
// sysctl named in its comment; a negative value leaves that sysctl alone.
type TCPSettings struct {
	SACK          int // net.ipv4.tcp_sack (1 = on)
	Recovery      int // net.ipv4.tcp_recovery (1 = RACK loss detection)
	EarlyRetrans  int // net.ipv4.tcp_early_retrans (3 = tail loss probe on, as in the paper)
	NoMetricsSave int // net.ipv4.tcp_no_metrics_save (1 = no per-destination cache)
	Timestamps    int // net.ipv4.tcp_timestamps (0 = off)
	// CongestionControl is written to net.ipv4.tcp_congestion_control (the
	// namespace default for new sockets); "" leaves it alone. It must be in
	// net.ipv4.tcp_available_congestion_control.
	CongestionControl string
	// RTOMin, when > 0, is set on the subnet route:
	// `ip route replace SUBNET dev DEV rto_min RTOMin`. The kernel keeps it
	// in milliseconds; sub-millisecond values are rejected.
	RTOMin time.Duration
	// Extra sysctls, key as in sysctl(8) ("net.ipv4.tcp_tw_reuse") or as a
	// path below /proc/sys ("net/ipv4/tcp_tw_reuse"). Applied after the above.
	Extra map[string]string
}

// PaperTCPSettings returns the paper's settings with congestion control cc
// ("" = leave the namespace default): SACK on, RACK on, TLP on
// (tcp_early_retrans=3), no metrics save, timestamps off, rto_min 1 ms.
func PaperTCPSettings(cc string) TCPSettings {
	return TCPSettings{
		SACK: 1, Recovery: 1, EarlyRetrans: 3, NoMetricsSave: 1, Timestamps: 0,
		CongestionControl: cc, RTOMin: time.Millisecond,
	}
}

// SysctlValue is one sysctl as requested and as read back.
type SysctlValue struct {
	Key  string `json:"key"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
	// Note explains an accepted deviation (see Report.CCPerSocketOnly).
	Note string `json:"note,omitempty"`
}

// Report is what ApplyTCPSettings applied, read back from the namespace.
type Report struct {
	Namespace   string        `json:"namespace"`
	Sysctls     []SysctlValue `json:"sysctls"`
	Route       string        `json:"route,omitempty"`      // `ip route show SUBNET dev DEV` after the change
	RTOMin      string        `json:"rto_min,omitempty"`    // rto_min parsed from Route ("1ms")
	RTOMinOK    bool          `json:"rto_min_ok,omitempty"` // Route carries the requested rto_min
	AvailableCC []string      `json:"available_cc"`
	// CCPerSocketOnly is set when the kernel refused to make the requested
	// congestion control the namespace default: a non-init namespace may
	// only default to an algorithm in the (global)
	// net.ipv4.tcp_allowed_congestion_control. Root can still set any
	// available algorithm per socket (TCP_CONGESTION; iperf -Z), which both
	// tools do, so this is reported but not an error. Sockets that do not
	// set it (e.g. the iperf server's accepted sockets, the receiver side)
	// use the namespace default shown in Sysctls.
	CCPerSocketOnly bool `json:"cc_per_socket_only,omitempty"`
}

// OK reports whether every requested value was read back as requested.
func (r Report) OK() bool {
	for _, s := range r.Sysctls {
		if !s.OK && s.Note == "" {
			return false
		}
	}
	return r.Route == "" || r.RTOMinOK
}

// String renders the report as aligned "key = value" lines.
func (r Report) String() string {
	var b strings.Builder
	ns := r.Namespace
	if ns == "" {
		ns = "(current)"
	}
	fmt.Fprintf(&b, "TCP settings in netns %s:\n", ns)
	for _, s := range r.Sysctls {
		mark := ""
		if !s.OK {
			mark = fmt.Sprintf("   (MISMATCH: wanted %s)", s.Want)
		}
		if s.Note != "" {
			mark = fmt.Sprintf("   (%s)", s.Note)
		}
		fmt.Fprintf(&b, "  %-36s = %s%s\n", s.Key, s.Got, mark)
	}
	if r.Route != "" {
		mark := ""
		if !r.RTOMinOK {
			mark = "   (MISMATCH: rto_min not applied)"
		}
		fmt.Fprintf(&b, "  %-36s = %s%s\n", "route", r.Route, mark)
	}
	fmt.Fprintf(&b, "  %-36s = %s\n", "available congestion control", strings.Join(r.AvailableCC, " "))
	return b.String()
}

func sysctlPath(key string) string {
	k := strings.TrimPrefix(key, "/proc/sys/")
	if !strings.Contains(k, "/") {
		k = strings.ReplaceAll(k, ".", "/")
	}
	return filepath.Join("/proc/sys", k)
}

func sysctlKey(key string) string {
	k := strings.TrimPrefix(key, "/proc/sys/")
	return strings.ReplaceAll(k, "/", ".")
}

// readSysctl/writeSysctl must run on a thread inside the target namespace:
// /proc/sys/net resolves the network namespace of the opening thread.
func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(string(b)), " "), nil
}

func writeSysctl(key, val string) error {
	return os.WriteFile(sysctlPath(key), []byte(val), 0o644)
}

// AvailableCongestionControl returns the congestion control algorithms the
// kernel offers, read from net.ipv4.tcp_available_congestion_control inside
// namespace ns ("" = current).
func AvailableCongestionControl(ns string) ([]string, error) {
	var out []string
	err := inNS(ns, func() error {
		v, err := readSysctl("net.ipv4.tcp_available_congestion_control")
		out = strings.Fields(v)
		return err
	})
	return out, err
}

var rtoMinRE = regexp.MustCompile(`\brto_min (?:lock )?(\S+)`)

// ApplyTCPSettings applies s inside namespace ns ("" = current): the sysctls
// are written from a thread inside the namespace and read back; if s.RTOMin
// > 0 the route to subnet via dev is replaced with one carrying rto_min
// (`ip -n NS route replace SUBNET dev DEV rto_min Nms`) and read back with
// `ip route show`. The returned Report lists every value as read back; the
// error is non-nil if anything could not be applied or reads back different.
// Note that replacing the kernel's connected route drops its "proto kernel"
// and "src" attributes; with one address per interface that changes nothing.
func ApplyTCPSettings(ns, dev, subnet string, s TCPSettings) (Report, error) {
	rep := Report{Namespace: ns}
	type kv struct{ k, v string }
	var want []kv
	add := func(k string, v int) {
		if v >= 0 {
			want = append(want, kv{k, strconv.Itoa(v)})
		}
	}
	add("net.ipv4.tcp_sack", s.SACK)
	add("net.ipv4.tcp_recovery", s.Recovery)
	add("net.ipv4.tcp_early_retrans", s.EarlyRetrans)
	add("net.ipv4.tcp_no_metrics_save", s.NoMetricsSave)
	add("net.ipv4.tcp_timestamps", s.Timestamps)
	if s.CongestionControl != "" {
		want = append(want, kv{"net.ipv4.tcp_congestion_control", s.CongestionControl})
	}
	extra := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	for _, k := range extra {
		want = append(want, kv{sysctlKey(k), s.Extra[k]})
	}

	var errs []string
	err := inNS(ns, func() error {
		avail, err := readSysctl("net.ipv4.tcp_available_congestion_control")
		if err != nil {
			return err
		}
		rep.AvailableCC = strings.Fields(avail)
		if s.CongestionControl != "" && !slices.Contains(rep.AvailableCC, s.CongestionControl) {
			errs = append(errs, fmt.Sprintf("congestion control %q not available (kernel has: %s)", s.CongestionControl, avail))
		}
		for _, w := range want {
			note := ""
			werr := writeSysctl(w.k, w.v)
			if werr != nil {
				if w.k == "net.ipv4.tcp_congestion_control" && errors.Is(werr, os.ErrPermission) {
					allowed, _ := readSysctl("net.ipv4.tcp_allowed_congestion_control")
					note = fmt.Sprintf("namespace default not settable (allowed: %s); set per socket", allowed)
					rep.CCPerSocketOnly = true
				} else {
					errs = append(errs, fmt.Sprintf("write %s=%s: %v", w.k, w.v, werr))
				}
			}
			got, rerr := readSysctl(w.k)
			if rerr != nil {
				errs = append(errs, fmt.Sprintf("read %s: %v", w.k, rerr))
			}
			ok := got == strings.Join(strings.Fields(w.v), " ")
			if !ok && werr == nil && rerr == nil {
				errs = append(errs, fmt.Sprintf("%s reads back %q, wanted %q", w.k, got, w.v))
			}
			rep.Sysctls = append(rep.Sysctls, SysctlValue{Key: w.k, Want: w.v, Got: got, OK: ok, Note: note})
		}
		return nil
	})
	if err != nil {
		return rep, err
	}

	if s.RTOMin > 0 {
		if s.RTOMin%time.Millisecond != 0 {
			errs = append(errs, fmt.Sprintf("rto_min %v is not a whole number of milliseconds", s.RTOMin))
		} else {
			ms := fmt.Sprintf("%dms", s.RTOMin/time.Millisecond)
			ipArgs := func(a ...string) []string {
				if ns != "" {
					return append([]string{"ip", "-n", ns}, a...)
				}
				return append([]string{"ip"}, a...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			argv := ipArgs("route", "replace", subnet, "dev", dev, "rto_min", ms)
			if out, err := nsCommand(ctx, "", argv...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out))))
			}
			argv = ipArgs("route", "show", subnet, "dev", dev)
			out, err := nsCommand(ctx, "", argv...).Output()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", strings.Join(argv, " "), err))
			}
			rep.Route = strings.Join(strings.Fields(string(out)), " ")
			if m := rtoMinRE.FindStringSubmatch(rep.Route); m != nil {
				rep.RTOMin = m[1]
			}
			rep.RTOMinOK = rep.RTOMin == ms
			if !rep.RTOMinOK && err == nil {
				errs = append(errs, fmt.Sprintf("route %q does not carry rto_min %s", rep.Route, ms))
			}
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("fct: TCP settings in netns %q: %s", ns, strings.Join(errs, "; "))
	}
	return rep, nil
}
