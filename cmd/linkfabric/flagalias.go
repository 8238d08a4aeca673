package main

import "github.com/spf13/pflag"

// runRenamed maps run's former flag names to their names with the
// mechanism's prefix (--lg-*, --cells-*). The former names still parse,
// hidden, and print a deprecation line naming the new flag.
var runRenamed = map[string]string{
	"auto": "lg-auto", "protect": "lg-protect", "target-loss": "lg-target-loss",
	"link-loss": "lg-link-loss", "copies": "lg-copies", "max-copies": "lg-max-copies",
	"ack-timeout": "lg-ack-timeout", "ack-delay": "lg-ack-delay",
	"dummy-interval": "lg-dummy-interval", "dummy-wait-max": "lg-dummy-wait-max",
	"dummy-copies": "lg-dummy-copies", "pause-threshold": "lg-pause-threshold",
	"resume-threshold": "lg-resume-threshold", "tx-buffer": "lg-tx-buffer",
	"pfc-class": "lg-pfc-class",
	"spray":     "cells-spray", "cell-size": "cells-size", "credits": "cells-credits",
	"pre-credit": "cells-pre-credit", "packing": "cells-packing", "node-id": "cells-node-id",
	"link-mode": "cells-link-mode", "reach-interval": "cells-reach-interval",
	"reach-th": "cells-reach-th", "reach-up": "cells-reach-up",
	"reasm-timeout": "cells-reasm-timeout", "loss-classes": "cells-loss-classes",
	"class-map": "cells-class-map",
}

// addFormerNames adds each former name of renamed as a hidden, deprecated
// flag that sets the same value as its new name.
func addFormerNames(f *pflag.FlagSet, renamed map[string]string) {
	for old, name := range renamed {
		fl := f.Lookup(name)
		if fl == nil {
			panic("flag --" + name + " is not defined")
		}
		f.AddFlag(&pflag.Flag{
			Name: old, Value: fl.Value, DefValue: fl.DefValue, NoOptDefVal: fl.NoOptDefVal,
			Usage: fl.Usage, Hidden: true, Deprecated: "use --" + name,
		})
	}
}
