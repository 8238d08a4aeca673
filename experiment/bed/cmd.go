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
