package alerts

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.rules.yml
var files embed.FS

// Builtin returns the rule files built into the binary, by file name: the
// rules `gpuwatch server` evaluates by default, the same files Prometheus or
// vmalert load.
func Builtin() map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(files, "*.rules.yml")
	sort.Strings(names)
	for _, n := range names {
		b, _ := files.ReadFile(n)
		out[n] = b
	}
	return out
}

// RunbookBase is where the built-in rules' runbook_url annotations point;
// `gpuwatch server --alerts.runbook-base` replaces it.
const RunbookBase = "https://github.com/gpuwatch/gpuwatch/blob/main/docs/runbooks/"
