package wanterr

import (
	"errors"
	"testing"
)

// TestMatches: "" wants no error, a word wants an error containing it.
func TestMatches(t *testing.T) {
	boom := errors.New("a boom here")
	if !Matches(nil, "") || Matches(boom, "") {
		t.Error(`want "" matches only no error`)
	}
	if !Matches(boom, "boom") || Matches(boom, "bang") || Matches(nil, "boom") {
		t.Error(`want "boom" matches only an error containing boom`)
	}
}
