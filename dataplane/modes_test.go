package dataplane_test

// The mechanisms' modes (lg, lgnb, monitor, cells, fec) and the link layers
// under the cells register themselves from their own packages, which import
// the engine. Importing them here, in the engine's external tests, registers
// them in the dataplane test binary too: the engine's own tests (package
// dataplane) run them by name.
import (
	_ "github.com/linkfabric/linkfabric/cellify/cellspipe"
	_ "github.com/linkfabric/linkfabric/fec/fecpipe"
	_ "github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)
