package main

// Modes that live outside the engine register themselves when imported.
import _ "github.com/linkfabric/linkfabric/example/twice"
