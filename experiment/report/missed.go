package report

import (
	"errors"
	"fmt"
)

// ErrTargetMissed is what an experiment's error is (errors.Is) when the
// experiment ran and measured, but a target it checks was missed: the
// command exits 3, not 1 (docs/commands.md, "Exit status").
var ErrTargetMissed = errors.New("a measured target was missed")

// missedError is an experiment's own message for a missed target.
type missedError struct{ msg string }

func (e missedError) Error() string        { return e.msg }
func (e missedError) Is(target error) bool { return target == ErrTargetMissed }

// Missed is an error with the message of fmt.Sprintf(format, a...) that
// is ErrTargetMissed.
func Missed(format string, a ...any) error { return missedError{fmt.Sprintf(format, a...)} }
