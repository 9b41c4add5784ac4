package telemetry

// Action is a recommended remediation for a fault, in the words of NVIDIA's Xid
// Catalog resolution buckets (../shared/reference/xid-catalog, sheet 3). The zero
// value is ActionNone: no action is known.
type Action string

// Actions, ordered in Severity by how disruptive they are (see ActionRank).
const (
	ActionNone             Action = ""
	ActionIgnore           Action = "IGNORE"
	ActionRestartApp       Action = "RESTART_APP"
	ActionRestartVM        Action = "RESTART_VM"
	ActionResetGPU         Action = "RESET_GPU"
	ActionRestartFM        Action = "RESTART_FM" // restart the NVIDIA fabric manager
	ActionDrainAndReset    Action = "DRAIN_AND_RESET"
	ActionRestartBM        Action = "RESTART_BM" // restart bare metal: reboot the node
	ActionCheckMechanicals Action = "CHECK_MECHANICALS"
	ActionUpdateSWFW       Action = "UPDATE_SWFW"
	ActionContactSupport   Action = "CONTACT_SUPPORT"
)

// actionRank orders actions by how much capacity they take away: higher is more
// disruptive. Used to pick the strongest action when several faults coincide.
var actionRank = map[Action]int{
	ActionNone:             0,
	ActionIgnore:           1,
	ActionRestartApp:       2,
	ActionRestartVM:        3,
	ActionResetGPU:         4,
	ActionRestartFM:        5,
	ActionDrainAndReset:    6,
	ActionRestartBM:        7,
	ActionUpdateSWFW:       8,
	ActionCheckMechanicals: 9,
	ActionContactSupport:   10,
}

// Rank orders actions by disruption; an unknown action ranks as ActionContactSupport
// because nobody should automate what they do not understand.
func (a Action) Rank() int {
	if r, ok := actionRank[a]; ok {
		return r
	}
	return actionRank[ActionContactSupport]
}

// Known reports whether a is one of the actions declared above.
func (a Action) Known() bool {
	_, ok := actionRank[a]
	return ok
}

// Max returns the more disruptive of a and b.
func (a Action) Max(b Action) Action {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}
