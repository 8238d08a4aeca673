package linkguardian_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/simlink"
)

// TestFastSendSuite runs the simulated-link suite with the kernel's send
// path (the model of the host port's XDP program, FastSend.Offer) at both
// senders, the core FastLag behind it.
func TestFastSendSuite(t *testing.T) {
	simFastSend = true
	defer func() { simFastSend = false }()
	for _, tc := range suiteOnFastPath {
		t.Run(tc.name, tc.f)
	}
}

// TestFastBothSuite runs it with both halves of the fast path on.
func TestFastBothSuite(t *testing.T) {
	simFast, simFastSend = true, true
	defer func() { simFast, simFastSend = false, false }()
	for _, tc := range suiteOnFastPath {
		t.Run(tc.name, tc.f)
	}
}

var _ = simlink.A
