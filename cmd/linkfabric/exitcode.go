package main

import (
	"errors"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/spf13/cobra"
)

// The exit statuses of linkfabric (docs/commands.md, "Exit status").
const (
	exitOK     = 0
	exitError  = 1 // the command ran and failed
	exitUsage  = 2 // the command line or node file cannot be parsed
	exitMissed = 3 // an experiment ran and measured, and missed a target it checks
)

// usageError is an error in how the command was invoked: an unknown
// command, flag or node-file key, a value not of its flag's type, wrong
// arguments.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the exit status for err, the error the command returned.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	case errors.Is(err, report.ErrTargetMissed):
		return exitMissed
	case strings.HasPrefix(err.Error(), "unknown command "):
		return exitUsage // cobra's, from the command tree's lookup
	}
	return exitError
}

// markUsageErrors makes the flag-parsing and argument errors of root and
// every command under it usageErrors.
func markUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usageError{err}
				}
				return nil
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
