// Package wanterr checks an error against what a table-driven test wants of
// it: none, or one whose text contains a given word.
package wanterr

import (
	"fmt"
	"strings"
	"testing"
)

// Matches reports whether err is what want asks for: no error for "", else
// an error whose text contains want.
func Matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

// Check fails tb (Errorf) when err does not match want (Matches), naming
// the case with format and args.
func Check(tb testing.TB, err error, want, format string, args ...any) {
	tb.Helper()
	if Matches(err, want) {
		return
	}
	what := fmt.Sprintf(format, args...)
	if want == "" {
		tb.Errorf("%s: %v", what, err)
		return
	}
	tb.Errorf("%s: error %v, want one containing %q", what, err, want)
}
