package lgexp

import "github.com/spf13/cobra"

// Commands are the LinkGuardian experiments' commands, each a top-level
// command of linkfabric: bench, stress, fct, goodput, chaos and demo.
func Commands() []*cobra.Command {
	return []*cobra.Command{benchCmd(), stressCmd(), fctCmd(), goodputCmd(), chaosCmd(), demoCmd()}
}
