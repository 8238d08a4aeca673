package fct

import (
	"io"

	"github.com/schollz/progressbar/v3"
)

// ProgressBar returns a Progress callback for BuiltinConfig/IperfConfig that
// draws a progress bar (flows done/total, rate, ETA) on w, e.g. os.Stderr.
// The bar is created on the first call, when the total is known.
func ProgressBar(w io.Writer, description string) func(done, total int) {
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(description),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("flows"),
				progressbar.OptionThrottle(100_000_000),
				progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
			)
		}
		bar.Set(done)
	}
}
