package main

import (
	"github.com/linkfabric/linkfabric/simfab"
	"github.com/spf13/cobra"
)

func cellsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cells",
		Short: "Cells with credits (Stardust, Aquila GNet): experiments",
		Long: `cells groups the experiments on cells with credits (package cellify): a
fabric of edge and fabric nodes that packs host frames into cells, sprays them
over every usable link and schedules them with credits from the egress port.

  sim   the simulated fabric (package simfab): the design study's scenarios on a
        virtual clock, deterministic for a seed, no root needed`,
		Example: `  linkfabric cells sim --scenario incast`,
	}
	cmd.AddCommand(cellsSimCmd())
	return cmd
}

var cellsSuite = simSuite{title: "cells sim", all: simfab.Scenarios}

func cellsSimCmd() *cobra.Command {
	var (
		scenario string
		seed     uint64
		asJSON   bool
		out      string
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated cell fabric's scenarios and check their figures",
		Long: `sim runs scenarios of the simulated cell fabric (package simfab): nodes running
the real cellify logic over links with rate, delay, bounded queues and loss, on
a virtual clock. Each scenario measures figures and checks each against the
range the design study gives (see the why column); the command fails if any
figure is out of range.

Scenarios:
` + cellsSuite.list() + `
A run is deterministic for its seed. scale takes 15–30 s; the others under 2 s each.`,
		Example: `  linkfabric cells sim
  linkfabric cells sim --scenario pushpull --seed 7
  linkfabric cells sim --scenario all --json --out out/cells-sim.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := cellsSuite.pick(scenario)
			if err != nil {
				return err
			}
			return cellsSuite.run(list, seed, asJSON, out)
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "scenario name, a comma-separated list, or all")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed (a run is deterministic for it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&out, "out", "", "also write the JSON report to this file (e.g. out/cells-sim.json)")
	return cmd
}
