// Package tdmaexp holds the TDMA experiments (package tdmaagent, behind
// `linkfabric tdma`) on a star of hosts; the testbed they share with the
// others is package bed. Command-line parsing stays in cmd/linkfabric.
package tdmaexp

import (
	"github.com/linkfabric/linkfabric/experiment/bed"
)

// Env is the testbed environment of the experiments in this package; its
// methods are the experiments. The unexported names below are the
// testbed's, by the names these experiments call them.
type Env struct{ *bed.Env }

func (e *Env) defaults() error { return e.Defaults() }

func (e *Env) progress(format string, args ...any) { e.Printf(format, args...) }

var (
	lastLines     = bed.LastLines
	runIperfPairs = bed.RunIperfPairs
)

type iperfTCP = bed.IperfTCP

const udpHeader = bed.UDPHeader
