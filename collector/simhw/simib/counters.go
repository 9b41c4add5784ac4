package simib

// counter indexes one file under ports/<n>/counters or ports/<n>/hw_counters.
type counter int

// The PortCounters (counters/) files a ConnectX-7 port exposes on a real H100 node,
// then the mlx5 hw_counters/ files. The set is the one in leptonai/gpud's
// sys-class-infiniband-h100.0 fixture (21 + 26 files).
const (
	cVL15Dropped counter = iota
	cExcessiveBufferOverrunErrors
	cLinkDowned
	cLinkErrorRecovery
	cLocalLinkIntegrityErrors
	cMulticastRcvPackets
	cMulticastXmitPackets
	cPortRcvConstraintErrors
	cPortRcvData
	cPortRcvErrors
	cPortRcvPackets
	cPortRcvRemotePhysicalErrors
	cPortRcvSwitchRelayErrors
	cPortXmitConstraintErrors
	cPortXmitData
	cPortXmitDiscards
	cPortXmitPackets
	cPortXmitWait
	cSymbolError
	cUnicastRcvPackets
	cUnicastXmitPackets

	cDuplicateRequest
	cImpliedNakSeqErr
	cLifespan
	cLocalAckTimeoutErr
	cOutOfBuffer
	cOutOfSequence
	cPacketSeqErr
	cReqCqeError
	cReqCqeFlushError
	cReqRemoteAccessErrors
	cReqRemoteInvalidRequest
	cRespCqeError
	cRespCqeFlushError
	cRespLocalLengthError
	cRespRemoteAccessErrors
	cRnrNakRetryErr
	cRoceAdpRetrans
	cRoceAdpRetransTo
	cRoceSlowRestart
	cRoceSlowRestartCnps
	cRoceSlowRestartTrans
	cRxAtomicRequests
	cRxDctConnect
	cRxIcrcEncapsulated
	cRxReadRequests
	cRxWriteRequests

	numCounters
)

const (
	dirCounters   = "counters"
	dirHWCounters = "hw_counters"
)

// counterDef describes one counter file. bits is the width of the hardware
// counter: the value saturates at 2^bits-1 (IBA PortCounters error counters are
// saturating, not wrapping). The widths are those the kernel's
// drivers/infiniband/core/sysfs.c reads from the PortCounters attribute; data and
// packet counters come from PortCountersExtended (64 bits) on mlx5.
type counterDef struct {
	name string
	dir  string
	bits uint
}

var counterDefs = [numCounters]counterDef{
	cVL15Dropped:                  {"VL15_dropped", dirCounters, 16},
	cExcessiveBufferOverrunErrors: {"excessive_buffer_overrun_errors", dirCounters, 4},
	cLinkDowned:                   {"link_downed", dirCounters, 8},
	cLinkErrorRecovery:            {"link_error_recovery", dirCounters, 8},
	cLocalLinkIntegrityErrors:     {"local_link_integrity_errors", dirCounters, 4},
	cMulticastRcvPackets:          {"multicast_rcv_packets", dirCounters, 64},
	cMulticastXmitPackets:         {"multicast_xmit_packets", dirCounters, 64},
	cPortRcvConstraintErrors:      {"port_rcv_constraint_errors", dirCounters, 8},
	cPortRcvData:                  {"port_rcv_data", dirCounters, 64},
	cPortRcvErrors:                {"port_rcv_errors", dirCounters, 16},
	cPortRcvPackets:               {"port_rcv_packets", dirCounters, 64},
	cPortRcvRemotePhysicalErrors:  {"port_rcv_remote_physical_errors", dirCounters, 16},
	cPortRcvSwitchRelayErrors:     {"port_rcv_switch_relay_errors", dirCounters, 16},
	cPortXmitConstraintErrors:     {"port_xmit_constraint_errors", dirCounters, 8},
	cPortXmitData:                 {"port_xmit_data", dirCounters, 64},
	cPortXmitDiscards:             {"port_xmit_discards", dirCounters, 16},
	cPortXmitPackets:              {"port_xmit_packets", dirCounters, 64},
	cPortXmitWait:                 {"port_xmit_wait", dirCounters, 32},
	cSymbolError:                  {"symbol_error", dirCounters, 16},
	cUnicastRcvPackets:            {"unicast_rcv_packets", dirCounters, 64},
	cUnicastXmitPackets:           {"unicast_xmit_packets", dirCounters, 64},

	// mlx5 Q counters and congestion counters. They are 64-bit here.
	cDuplicateRequest:        {"duplicate_request", dirHWCounters, 64},
	cImpliedNakSeqErr:        {"implied_nak_seq_err", dirHWCounters, 64},
	cLifespan:                {"lifespan", dirHWCounters, 64},
	cLocalAckTimeoutErr:      {"local_ack_timeout_err", dirHWCounters, 64},
	cOutOfBuffer:             {"out_of_buffer", dirHWCounters, 64},
	cOutOfSequence:           {"out_of_sequence", dirHWCounters, 64},
	cPacketSeqErr:            {"packet_seq_err", dirHWCounters, 64},
	cReqCqeError:             {"req_cqe_error", dirHWCounters, 64},
	cReqCqeFlushError:        {"req_cqe_flush_error", dirHWCounters, 64},
	cReqRemoteAccessErrors:   {"req_remote_access_errors", dirHWCounters, 64},
	cReqRemoteInvalidRequest: {"req_remote_invalid_request", dirHWCounters, 64},
	cRespCqeError:            {"resp_cqe_error", dirHWCounters, 64},
	cRespCqeFlushError:       {"resp_cqe_flush_error", dirHWCounters, 64},
	cRespLocalLengthError:    {"resp_local_length_error", dirHWCounters, 64},
	cRespRemoteAccessErrors:  {"resp_remote_access_errors", dirHWCounters, 64},
	cRnrNakRetryErr:          {"rnr_nak_retry_err", dirHWCounters, 64},
	cRoceAdpRetrans:          {"roce_adp_retrans", dirHWCounters, 64},
	cRoceAdpRetransTo:        {"roce_adp_retrans_to", dirHWCounters, 64},
	cRoceSlowRestart:         {"roce_slow_restart", dirHWCounters, 64},
	cRoceSlowRestartCnps:     {"roce_slow_restart_cnps", dirHWCounters, 64},
	cRoceSlowRestartTrans:    {"roce_slow_restart_trans", dirHWCounters, 64},
	cRxAtomicRequests:        {"rx_atomic_requests", dirHWCounters, 64},
	cRxDctConnect:            {"rx_dct_connect", dirHWCounters, 64},
	cRxIcrcEncapsulated:      {"rx_icrc_encapsulated", dirHWCounters, 64},
	cRxReadRequests:          {"rx_read_requests", dirHWCounters, 64},
	cRxWriteRequests:         {"rx_write_requests", dirHWCounters, 64},
}

// counterByName maps a file name to its counter.
var counterByName = func() map[string]counter {
	m := make(map[string]counter, numCounters)
	for c, d := range counterDefs {
		m[d.name] = counter(c)
	}
	return m
}()

// CounterNames returns the names of every counter file a port writes, counters/
// first, in a fixed order.
func CounterNames() []string {
	names := make([]string, numCounters)
	for c, d := range counterDefs {
		names[c] = d.name
	}
	return names
}

// limit returns the saturation value of c.
func (c counter) limit() uint64 {
	bits := counterDefs[c].bits
	if bits >= 64 {
		return ^uint64(0)
	}
	return 1<<bits - 1
}
