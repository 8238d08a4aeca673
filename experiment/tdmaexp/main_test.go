package tdmaexp

import (
	"testing"

	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
)

func TestMain(m *testing.M) { bedtest.Main(m) }

// buildSelf is the linkfabric command the experiments start.
func buildSelf(t *testing.T) string { return bedtest.Self(t) }

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { return bedtest.Writer{T: w.t}.Write(b) }
