// Command linkfabric runs link-layer mechanisms from datacenter papers
// (LinkGuardian link-local retransmission, cells with credits, PFC-driven TDMA)
// as a userspace dataplane over AF_XDP, builds network-namespace testbeds for
// them, injects loss, and measures what they do.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/linkfabric/linkfabric/experiment/cellsexp"
	"github.com/linkfabric/linkfabric/experiment/fecexp"
	"github.com/linkfabric/linkfabric/experiment/lgexp"
	"github.com/linkfabric/linkfabric/experiment/tdmaexp"
	"github.com/spf13/cobra"
)

var (
	logLevel string
	log      *slog.Logger
)

func main() {
	root := newRoot()
	// SIGHUP too: a closed terminal or an ended session must take a
	// testbed down like Ctrl-C does, not leave namespaces and dataplanes.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "linkfabric:", err)
		stop()
		os.Exit(exitCode(err))
	}
}

// newRoot is the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "linkfabric",
		Short: "Datacenter link-layer mechanisms as a userspace AF_XDP dataplane",
		Long: `linkfabric runs link-layer mechanisms that datacenter papers build in switch
hardware on ordinary Linux interfaces, through AF_XDP and eBPF/XDP: LinkGuardian
link-local retransmission (run --mode lg, lgnb, monitor), cells sprayed over
parallel links with credits (--mode cells), RAIL's parity and loss classes (--mode
fec, cells --cells-loss-classes), PFC-driven TDMA (tdma), and plain forwarding
(--mode forward). Each comes with its paper's experiments as commands.

The quickest start: 'linkfabric up' (a testbed with a dataplane on each switch, until
Ctrl-C). A typical session by hand:

  linkfabric up --mode none                       # h1 — sw1 ══ sw2 — h2 in namespaces
  linkfabric run --netns lfsw1 --host-port host0 --link-port link0 --mode forward &
  linkfabric run --netns lfsw2 --host-port host0 --link-port link0 --mode forward &
  linkfabric impair --netns lfsw2 --dev link0 --loss 1e-3   # lossy link sw1→sw2
  ip netns exec lfh1 ping 10.0.0.2
  linkfabric testbed down

The testbeds and experiments need root (namespaces); run needs only its
capabilities (docs/run.md, "Capabilities"), and reads a node file with --config.
Exit status: 0 ok, 1 failed, 2 usage, 3 an experiment missed a target it checks.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				lvl = slog.LevelInfo
			}
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			slog.SetDefault(log)
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.Version = readBuildInfo().String()
	root.AddCommand(upCmd(), testbedCmd(), runCmd(), impairCmd(), statsCmd(), versionCmd(), checkCmd())
	root.AddCommand(lgexp.Commands()...)
	root.AddCommand(cellsexp.Command(), tdmaexp.Command(), fecexp.Command())
	markUsageErrors(root)
	return root
}
