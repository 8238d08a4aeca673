package bed

import (
	"context"
	"log/slog"
)

// CmdEnv is the environment of an experiment started by its command: the
// testbed prefix given, progress to the log.
func CmdEnv(prefix string) *Env { return &Env{Prefix: prefix, Log: slog.Default()} }

// Exp runs an experiment for its command: it checks cfg (Normalize), then
// runs exp with it in env.
func Exp[C any, PC interface {
	*C
	Normalize() error
}, R any](ctx context.Context, env *Env, cfg PC, exp func(context.Context, *Env, C) (R, error)) (R, error) {
	if err := cfg.Normalize(); err != nil {
		var none R
		return none, err
	}
	return exp(ctx, env, *cfg)
}

// Step is one step of an experiment's runs: its number (1 to Total) and
// the run, arm and variant it measures.
type Step[V any] struct {
	N, Total, Run int
	Arm           string
	Variant       V
}

// CleanThenLossy are the variants of an experiment that runs every arm
// without its loss, then with it.
var CleanThenLossy = []bool{false, true}

// Steps calls each for every run (1 to runs), arm and variant in turn, runs
// outermost, until each fails or ctx ends.
func Steps[V any](ctx context.Context, runs int, arms []string, variants []V, each func(Step[V]) error) error {
	s := Step[V]{Total: runs * len(arms) * len(variants)}
	for s.Run = 1; s.Run <= runs; s.Run++ {
		for _, s.Arm = range arms {
			for _, s.Variant = range variants {
				if err := ctx.Err(); err != nil {
					return err
				}
				s.N++
				if err := each(s); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
