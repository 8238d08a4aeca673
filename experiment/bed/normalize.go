package bed

import (
	"fmt"
	"slices"
	"strings"
)

// NormalizeArms fills *arms with a copy of def when none are given and
// checks that each is one of have; what names the command in the error.
func NormalizeArms(what string, arms *[]string, def, have []string) error {
	if len(*arms) == 0 {
		*arms = slices.Clone(def)
	}
	return CheckOneOf(what, "arm", *arms, have)
}

// CheckOneOf checks that each of got is one of have: "<what>: unknown
// <noun> "x" (want one of a, b, c)".
func CheckOneOf(what, noun string, got, have []string) error {
	for _, g := range got {
		if !slices.Contains(have, g) {
			return fmt.Errorf("%s: unknown %s %q (want one of %s)", what, noun, g, strings.Join(have, ", "))
		}
	}
	return nil
}

// Positive is v, or def when v is not positive (left unset, or nonsense
// that means the default).
func Positive[T ~int | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
