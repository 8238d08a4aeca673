package main

// Modes that live outside the engine register themselves when imported:
// LinkGuardian's (lg, lgnb, monitor), the cells', FEC's, and the example.
import (
	_ "github.com/linkfabric/linkfabric/cellify/cellspipe"
	_ "github.com/linkfabric/linkfabric/example/twice"
	_ "github.com/linkfabric/linkfabric/fec/fecpipe"
	_ "github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)
