// Package alerts holds gpuwatch's Prometheus alerting and recording rules
// (gpuwatch.rules.yml) and their promtool unit tests; its Go test runs
// `promtool check rules` and `promtool test rules` so make test keeps them
// valid. See docs/drain.md for the drain alerts' runbooks and docs/fairshare.md
// for the recording rules KAI and dashboards read.
package alerts
