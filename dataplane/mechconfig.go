package dataplane

import (
	"fmt"
	"reflect"
)

// mechConfigs holds each mechanism's own configuration (Config.mechs),
// reached with Mech. The engine stores it and never reads it.
//
// A Config is a value: copying one copies its mechanisms' configurations
// too, as if they were fields. The map is shared by the copies until one
// of them reaches it through Mech: that copy (owner differs from the Config
// reaching it) then takes a copy of every entry first, so that neither
// sees the other's changes. A copy of a Config thus holds the mechanisms'
// configurations as they were when it first reached them.
type mechConfigs struct {
	owner *Config
	m     map[string]any // name → *T
}

// Mech is c's configuration of mechanism name (what its flags fill and its
// pipelines read): a *T, the zero T until set. A mechanism names its
// configuration after itself ("lg", "cells", "fec"), and every caller of a
// name must ask for the same T (another T panics: a programming error).
// The engine itself never reads one.
//
// Mech is not for the hot path: a pipeline keeps the pointer it got when
// it was made. On the configuration in force (Worker.Config) Mech writes
// nothing, so workers may call it at once; on a copy (Dataplane.Config
// returns one) its first call copies every mechanism's configuration.
func Mech[T any](c *Config, name string) *T {
	c.ownMechs()
	v, ok := c.mechs.m[name]
	if !ok {
		p := new(T)
		c.mechs.m[name] = p
		return p
	}
	p, ok := v.(*T)
	if !ok {
		panic(fmt.Sprintf("dataplane: mechanism configuration %q is a %T, asked for as a %T", name, v, (*T)(nil)))
	}
	return p
}

// ownMechs makes c's mechanism configurations c's own: a copy of those of
// the Config it was copied from (see mechConfigs).
func (c *Config) ownMechs() {
	if c.mechs.owner == c && c.mechs.m != nil {
		return
	}
	m := make(map[string]any, len(c.mechs.m))
	for name, v := range c.mechs.m {
		p := reflect.New(reflect.TypeOf(v).Elem())
		p.Elem().Set(reflect.ValueOf(v).Elem())
		m[name] = p.Interface()
	}
	c.mechs = mechConfigs{owner: c, m: m}
}

// WithMech is c with mechanism name's configuration set to v (see Mech).
func WithMech[T any](c Config, name string, v T) Config {
	*Mech[T](&c, name) = v
	return c
}
