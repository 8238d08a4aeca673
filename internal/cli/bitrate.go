package cli

import (
	"strconv"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/pflag"
)

// Every rate a command takes is a bit rate in one format, that of
// netns.ParseBitRate (500M, 10G, 2.5Gbit, 200e6), checked when the flag is
// parsed: a wrong one is a usage error naming the flag.

// bitRateFloat is a bit-rate flag held as bits per second in a float64.
type bitRateFloat struct{ p *float64 }

func (v bitRateFloat) Set(s string) error {
	r, err := netns.ParseBitRate(s)
	if err != nil {
		return err
	}
	*v.p = float64(r)
	return nil
}

func (v bitRateFloat) String() string {
	if *v.p == float64(uint64(*v.p)) {
		return netns.BitRate(*v.p).String()
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (bitRateFloat) Type() string { return "bitrate" }

// BitRateVar defines a bit-rate flag whose value is bits per second.
func BitRateVar(f *pflag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	f.Var(bitRateFloat{p}, name, usage)
}

// bitRateString is a bit-rate flag kept as the text given (for code that
// parses it later with its own default), checked when it is set.
type bitRateString struct{ p *string }

func (v bitRateString) Set(s string) error {
	if s == "" {
		*v.p = "" // unset: the command's default
		return nil
	}
	if _, err := netns.ParseBitRate(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

func (v bitRateString) String() string { return *v.p }
func (bitRateString) Type() string     { return "bitrate" }

// BitRateStringVar defines a bit-rate flag kept as text; the text parses
// with netns.ParseBitRate, or is "" (unset: the command's default).
func BitRateStringVar(f *pflag.FlagSet, p *string, name, def, usage string) {
	*p = def
	f.Var(bitRateString{p}, name, usage)
}
