//go:build agentonly

package main

// The node agent alone (`go build -tags agentonly`, bin/gpuwatch-agent): the
// subcommands a GPU node runs, and none of the control plane's.

// programName is how the binary names itself in usage and errors.
const programName = "gpuwatch-agent"

// programSummary is the first line of the usage.
const programSummary = "gpuwatch-agent is gpuwatch's node agent alone: GPU, NVLink, InfiniBand and Xid telemetry, health, /metrics."

// defaultCommand runs when the first argument is a flag: `gpuwatch-agent
// --simulate hgx-h100` is `gpuwatch-agent agent --simulate hgx-h100`.
const defaultCommand = "agent"

// commands is the explicit registry of the agent's subcommands.
func commands() map[string]command { return agentCommands() }
