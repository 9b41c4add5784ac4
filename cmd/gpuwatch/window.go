//go:build !agentonly

package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/gpuwatch/gpuwatch/analyzer/report"
)

// windowFlags are the analyzer commands' window: --from and --to, or --last.
type windowFlags struct {
	from, to string
	last     time.Duration
	def      string // the default --last, for messages
}

func (w *windowFlags) register(fs *flag.FlagSet, def string) {
	w.def = def
	fs.StringVar(&w.from, "from", "", "start of the window, RFC 3339 (with --to)")
	fs.StringVar(&w.to, "to", "", "end of the window, RFC 3339 (with --from)")
	fs.DurationVar(&w.last, "last", 0, "the window ending now, instead of --from and --to (default "+def+")")
}

// set puts the window into the API's query parameters; the server's default
// window when none is given.
func (w *windowFlags) set(v url.Values) error {
	switch {
	case w.last != 0 && (w.from != "" || w.to != ""):
		return fmt.Errorf("%w: give --from and --to, or --last, not both", errUsage)
	case w.last < 0:
		return fmt.Errorf("%w: --last %s: want a positive duration such as %s", errUsage, w.last, w.def)
	case w.from != "" || w.to != "":
		v.Set(report.ParamFrom, w.from)
		v.Set(report.ParamTo, w.to)
	case w.last > 0:
		v.Set(report.ParamLast, w.last.String())
	}
	return nil
}
