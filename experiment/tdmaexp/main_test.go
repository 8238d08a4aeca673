package tdmaexp

import (
	"testing"

	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
)

func TestMain(m *testing.M) { bedtest.Main(m) }
