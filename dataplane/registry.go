package dataplane

import (
	"fmt"
	"sort"
	"strings"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/spf13/pflag"
)

// Spec is what a mode is to the engine: the ports it runs on, what it
// asks of the engine's checks and sizing, and how it starts. Each mode
// registers its Spec from its own file's init (Register); the engine
// switches on no mode. A nil hook does nothing.
//
// A mode with an XDP fast path (--fastpath) says which: Redirect, the
// kernel's redirect port to port (forward's), or KernelPath, directions of
// its own whose kernel halves its Instance switches and reads (KernelPath,
// fastpath.go); Prepare, FastBlocked and PortOptions are what such a path
// asks of the configuration and the ports (LinkGuardian's send path:
// linkguardian/lgpipe/lgfast.go).
type Spec struct {
	// Hosts and Links are the least and most host and link ports.
	Hosts, Links [2]int
	// Wire says the mode's link frames carry the link header: they are
	// sealed and checked (Config.Link.Integrity, and --integrity auto is
	// resolved for them), and its control goes on the priority lane.
	Wire bool
	// Workers says the mode may run on several workers (Config.Workers).
	Workers bool
	// ClassQueues says its host frames wait in class queues (ClassQueues,
	// with their PFC counters); any mode's do with --pfc.
	ClassQueues bool
	// NoPFC, if not empty, is why the mode refuses --pfc.
	NoPFC string
	// QueueRings is the default FramesPerQueue in rings (2 if zero).
	QueueRings uint32
	// Default makes it the mode of a Config without one (one mode has
	// it: forward).
	Default bool
	// Redirect says the mode's frames may go from its host port to its
	// link port and back unchanged: its two directions may take the
	// kernel's redirect port to port (FastPath; forward's).
	Redirect bool
	// KernelPath says its Instance is a KernelPath: the directions it has
	// on the fast path are kernel halves of its own (LinkGuardian's).
	KernelPath bool

	// Prepare makes the mode's decisions that size the rings: it runs
	// once the ports, the workers, the frame size and the integrity are
	// settled, and may set c.RingSize (default 2048).
	Prepare func(c *Config)
	// FastBlocked is why the mode's configuration rules the kernel path
	// out ("" if nothing does), asked after the engine's own reasons.
	FastBlocked func(c *Config) string
	// PortOptions sets what port i's XDP program is attached with (the
	// ports before it in the worker's numbering are attached).
	PortOptions func(c *Config, i int, role PortRole, attached []*Port, o *bpf.PortOptions)

	// Configure fills the mode's defaults and checks its configuration
	// (before the sizes are checked and the ports attach).
	Configure func(c *Config) error
	// CheckSizes checks the mode's sizes against the rings and the batch
	// once the engine's own are known to be sound.
	CheckSizes func(c *Config) error
	// Frames is how many UMEM frames the mode's buffers hold, and what
	// holds them (said in the error of a --frames too small).
	Frames func(c *Config) (n uint64, what string, err error)
	// CheckMTU checks that a host frame of hostMTU fits the link port's
	// linkMTU with what the mode adds (ip is the ip command for the
	// ports' namespace, where names it).
	CheckMTU func(c *Config, hostMTU, linkMTU int, ip, where string) error
	// New starts the mode on d once the ports are bound: it may complete
	// cfg, the configuration in force, with what needs the ports.
	New func(d *Dataplane, cfg *Config) (Instance, error)
}

// Instance is a mode running on a dataplane.
type Instance interface {
	// Pipeline makes worker w's pipeline (once per worker).
	Pipeline(w *Worker) (Pipeline, error)
	// Stats are the mode's entries of /stats.json (nil: none).
	Stats() map[string]any
	// Register registers the mode's metrics.
	Register(r *metrics.Registry) error
	// Close ends the instance once the workers stopped; log its exit
	// counters there.
	Close()
}

// integrityCounter is an Instance that counts the integrity check of
// worker i's link frames.
type integrityCounter interface {
	Integrity(worker int) *IntegrityStats
}

// specs are the registered modes; defaultMode is the one whose Spec says
// Default.
var (
	specs       = map[Mode]*Spec{}
	defaultMode Mode
)

// Register makes mode name run with s. It is called from init; a name
// registered twice, or a second Default mode, panics.
func Register(name Mode, s Spec) {
	if _, ok := specs[name]; ok {
		panic(fmt.Sprintf("dataplane: mode %q registered twice", name))
	}
	if s.Default {
		if defaultMode != "" {
			panic(fmt.Sprintf("dataplane: modes %q and %q both registered as the default", defaultMode, name))
		}
		defaultMode = name
	}
	specs[name] = &s
}

// spec is the mode's Spec (the zero Spec if it is not registered: the
// ports' check says so first).
func (c *Config) spec() *Spec {
	if s, ok := specs[c.Mode]; ok {
		return s
	}
	return &Spec{}
}

// Modes lists the modes a dataplane runs, sorted.
func Modes() []Mode {
	var ms []Mode
	for m := range specs {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
	return ms
}

// ModeList names the registered modes, sorted: "cells, fec, forward, …".
func ModeList() string {
	var s []string
	for _, m := range Modes() {
		s = append(s, string(m))
	}
	return strings.Join(s, ", ")
}

// workerModes names the modes that run on several workers ("a, b and c").
func workerModes() string { return joinModes(func(s *Spec) bool { return s.Workers }) }

// joinModes names the modes whose Spec has a property ("a, b and c").
func joinModes(has func(*Spec) bool) string {
	var s []string
	for _, m := range Modes() {
		if has(specs[m]) {
			s = append(s, string(m))
		}
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Instance is the running mode (nil before New made it).
func (d *Dataplane) Instance() Instance { return d.inst }

// ModeStats are the running mode's entries of /stats.json
// (Instance.Stats; nil for a mode without any).
func (d *Dataplane) ModeStats() map[string]any {
	if d.inst == nil {
		return nil
	}
	return d.inst.Stats()
}

// noInstance is the Instance of a mode without statistics of its own.
type noInstance struct {
	pipeline func(w *Worker) (Pipeline, error)
}

func (n noInstance) Pipeline(w *Worker) (Pipeline, error) { return n.pipeline(w) }
func (noInstance) Stats() map[string]any                  { return nil }
func (noInstance) Register(*metrics.Registry) error       { return nil }
func (noInstance) Close()                                 {}

// Stateless is a Spec's New for a mode whose instance is only its
// pipeline.
func Stateless(pipeline func(w *Worker) (Pipeline, error)) func(*Dataplane, *Config) (Instance, error) {
	return func(*Dataplane, *Config) (Instance, error) { return noInstance{pipeline}, nil }
}

// Flags are a mechanism's command-line flags (linkfabric run): Declare
// declares them into f, each named with the mechanism's prefix, filling
// c's configuration (Mech); Check runs once they are parsed and c.Mode is
// set, and checks what they say together (f says which were given:
// Changed). A nil Check checks nothing.
type Flags struct {
	Declare func(f *pflag.FlagSet, c *Config)
	Check   func(f *pflag.FlagSet, c *Config) error
}

// flagSets are the registered mechanisms' flags, by mechanism name.
var flagSets = map[string]Flags{}

// RegisterFlags makes mechanism name's flags part of run's (DeclareFlags).
// It is called from init, once per mechanism however many modes it runs
// (lg, lgnb and monitor share LinkGuardian's); a name registered twice
// panics.
func RegisterFlags(name string, fl Flags) {
	if _, ok := flagSets[name]; ok {
		panic(fmt.Sprintf("dataplane: flags of %q registered twice", name))
	}
	flagSets[name] = fl
}

// flagNames are the mechanisms with flags, sorted.
func flagNames() []string {
	names := make([]string, 0, len(flagSets))
	for name := range flagSets {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// DeclareFlags declares every registered mechanism's flags into f, filling
// c (which must not be copied before they are parsed).
func DeclareFlags(f *pflag.FlagSet, c *Config) {
	for _, name := range flagNames() {
		flagSets[name].Declare(f, c)
	}
}

// CheckFlags runs every registered mechanism's Check, in name order, and
// returns the first error.
func CheckFlags(f *pflag.FlagSet, c *Config) error {
	for _, name := range flagNames() {
		if check := flagSets[name].Check; check != nil {
			if err := check(f, c); err != nil {
				return err
			}
		}
	}
	return nil
}
