package dataplane

import (
	"slices"
	"testing"
)

// TestRegistry: every mode is registered from its own file, and the
// errors the specs' fields and hooks give are word for word what the
// engine said when it switched on the mode.
func TestRegistry(t *testing.T) {
	for _, m := range []Mode{ModeForward, modeLG, modeLGNB, modeMonitor, modeCells, modeFEC} {
		if !slices.Contains(Modes(), m) {
			t.Errorf("mode %s is not registered (modes: %s)", m, ModeList())
		}
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"workers", func() error {
			c := Config{Mode: modeCells, Workers: 2}
			return c.checkWorkers()
		}, "dataplane: --workers 2: mode cells runs one worker; several run modes forward, lg, lgnb and monitor (leave --workers out)"},
		{"pfc", func() error {
			c := Config{Mode: modeCells, PFC: PFCConfig{Enabled: true}}
			return c.pfcDefaults()
		}, "dataplane: --pfc: mode cells has its own queues and credits; --pfc applies to forward, lg, lgnb, monitor and fec"},
		{"fec protect", func() error {
			c := LGProtect(Config{Mode: modeFEC}, "tx")
			return c.spec().Configure(&c)
		}, "dataplane: --lg-protect tx: mode fec protects both directions of the link; leave --lg-protect out"},
		{"fastpath xdp", func() error {
			d := &Dataplane{cfg: Config{Mode: modeCells, FastPath: FastPathXDP}}
			return d.newFastPath()
		}, "dataplane: --fastpath xdp: mode cells has no XDP fast path (forward has, and lg, lgnb and monitor); use --fastpath auto or afxdp"},
	} {
		if err := tc.err(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("registering mode forward twice did not panic")
		}
	}()
	Register(ModeForward, Spec{})
}

// TestRegisterDefault: a Config without a mode runs the mode registered
// as the default, forward, and registering a second default panics and
// registers nothing.
func TestRegisterDefault(t *testing.T) {
	c := Config{HostPort: "host0", LinkPort: "link0"}
	if err := c.defaults(); err != nil || c.Mode != ModeForward {
		t.Errorf("a Config without a mode: mode %q, %v; want forward", c.Mode, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a second default mode did not panic")
		}
		if _, ok := specs["other"]; ok || defaultMode != ModeForward {
			t.Errorf("after the panic: mode other registered %v, default %q", ok, defaultMode)
		}
	}()
	Register("other", Spec{Default: true})
}
