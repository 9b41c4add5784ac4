// Package alerts holds gpuwatch's Prometheus alerting and recording rules,
// one group per file (gpu, fabric, agent, control, drain, fairshare, fleet
// .rules.yml), each with its promtool unit tests (<file>.test.yml). The
// files are built into the binary (Builtin) and `gpuwatch server` evaluates
// them by default; Prometheus and vmalert load the same files. Every alert
// has a runbook at RunbookBase + <AlertName>.md (docs/runbooks). The Go tests
// check the rules' form, the runbooks, and run `promtool check rules` and
// `promtool test rules`, so make test keeps them valid. docs/alerts.md
// explains how they are evaluated, routed and inhibited.
package alerts
