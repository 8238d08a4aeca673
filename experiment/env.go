// Package experiment runs linkfabric's experiments on a testbed: it starts the
// dataplane processes, runs traffic tools (iperf3, sockperf, the frame
// generator) in the hosts' namespaces, and collects and reports the results.
// Command-line parsing stays in cmd/linkfabric; the logic lives here.
package experiment

import (
	"github.com/linkfabric/linkfabric/experiment/bed"
)

// Env is the testbed environment of the experiments in this package.
type Env struct{ *bed.Env }

func (e *Env) defaults() error { return e.Defaults() }

func (e *Env) progress(format string, args ...any) { e.Printf(format, args...) }

var (
	lastLines     = bed.LastLines
	runIperfPairs = bed.RunIperfPairs
)

type iperfTCP = bed.IperfTCP

const udpHeader = bed.UDPHeader
