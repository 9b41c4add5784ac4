package slurm

import (
	"errors"
	"strings"
)

// ErrUnreachable is matched (errors.Is) by a command's error when slurmctld did
// not answer: it is down, restarting or too slow. The call may succeed later;
// retry with back-off.
var ErrUnreachable = errors.New("slurm controller unreachable")

// ErrRejected is matched (errors.Is) by a command's error when slurmctld answered
// and refused: an unknown node or job, a bad value, no permission. Retrying the
// same call will not help.
var ErrRejected = errors.New("rejected by slurm")

// CommandError is the error of one Slurm command that ran and failed. It matches
// ErrUnreachable or ErrRejected, never both.
type CommandError struct {
	// Command is the command line, e.g. `scontrol update NodeName=gpu02 State=DRAIN …`.
	Command string
	// Message is what the command said about the failure (its standard error, or
	// the errors of its JSON output), trimmed.
	Message string
	// Unreachable is true when the controller did not answer.
	Unreachable bool
	// Err is the underlying cause (an exit status, a timeout), or nil.
	Err error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString(e.Command)
	if e.Unreachable {
		b.WriteString(": slurm controller unreachable")
	} else {
		b.WriteString(": rejected")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(" (")
		b.WriteString(e.Err.Error())
		b.WriteString(")")
	}
	return b.String()
}

// Is matches ErrUnreachable or ErrRejected.
func (e *CommandError) Is(target error) bool {
	switch target {
	case ErrUnreachable:
		return e.Unreachable
	case ErrRejected:
		return !e.Unreachable
	}
	return false
}

// Unwrap returns the underlying cause.
func (e *CommandError) Unwrap() error { return e.Err }

// unreachableMessages are what Slurm 22.05's commands print when they cannot talk
// to slurmctld (slurm_strerror of the communication errors). A failure that says
// none of these is checked with `scontrol ping`, because some commands say
// something else: `scontrol update jobid=…` with the controller down prints
// "Unexpected message received for job N", and `squeue --json`/`sinfo --json`
// exit 0 with only "Unspecified error" in their JSON.
var unreachableMessages = []string{
	"Unable to contact slurm controller",
	"Socket timed out on send/recv operation",
	"Zero Bytes were transmitted or received",
	"Communication connection failure",
	"Connection refused",
	"Slurm backup controller in standby mode",
}

func saysUnreachable(msg string) bool {
	for _, m := range unreachableMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// pingSaysDown reads `scontrol ping`: the controller is unreachable when no
// controller (primary or backup) "is UP".
func pingSaysDown(out string) bool {
	return strings.Contains(out, "Slurmctld(") && !strings.Contains(out, " is UP")
}
