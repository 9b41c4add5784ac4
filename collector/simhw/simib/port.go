package simib

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PortState is the IBA logical port state, as in ports/<n>/state.
type PortState int

// Logical port states. The kernel prints them as "<n>: <NAME>".
const (
	StateDown   PortState = 1
	StateInit   PortState = 2
	StateArmed  PortState = 3
	StateActive PortState = 4
)

// String returns the kernel's name for s (drivers/infiniband/core/sysfs.c).
func (s PortState) String() string {
	switch s {
	case 0:
		return "NOP"
	case StateDown:
		return "DOWN"
	case StateInit:
		return "INIT"
	case StateArmed:
		return "ARMED"
	case StateActive:
		return "ACTIVE"
	case 5:
		return "ACTIVE_DEFER"
	}
	return "<unknown>"
}

// PhysState is the IBA physical port state, as in ports/<n>/phys_state.
type PhysState int

// Physical port states. The kernel prints them as "<n>: <Name>".
const (
	PhysSleep                     PhysState = 1
	PhysPolling                   PhysState = 2
	PhysDisabled                  PhysState = 3
	PhysPortConfigurationTraining PhysState = 4
	PhysLinkUp                    PhysState = 5
	PhysLinkErrorRecovery         PhysState = 6
)

// String returns the kernel's name for s (drivers/infiniband/core/sysfs.c).
func (s PhysState) String() string {
	switch s {
	case PhysSleep:
		return "Sleep"
	case PhysPolling:
		return "Polling"
	case PhysDisabled:
		return "Disabled"
	case PhysPortConfigurationTraining:
		return "PortConfigurationTraining"
	case PhysLinkUp:
		return "LinkUp"
	case PhysLinkErrorRecovery:
		return "LinkErrorRecovery"
	case 7:
		return "Phy Test"
	}
	return "<unknown>"
}

// Traffic model constants.
const (
	// mtu is the payload per packet used to derive packet counts from bytes: the
	// 4 KiB IB MTU that NCCL and most RDMA traffic use.
	mtu = 4096
	// writeRequestBytes and readRequestBytes turn received and transmitted bytes
	// into rx_write_requests and rx_read_requests (one RDMA write per 64 KiB
	// received, one read request served per 1 MiB sent): a rough model whose only
	// promise is that the counters grow with traffic.
	writeRequestBytes = 64 << 10
	readRequestBytes  = 1 << 20
	// waitFromUtil is the link utilization above which port_xmit_wait starts to
	// grow (credit starvation as the link nears line rate).
	waitFromUtil = 0.7
)

// Port is one port of an HCA. The exported fields are its static configuration:
// set them before the first WriteSysfs and not concurrently with it. The link
// state and the counters change only through the methods.
type Port struct {
	// Num is the port number, 1-based as in ports/<n>.
	Num int
	// Rate is the ports/<n>/rate text, e.g. "400 Gb/sec (4X NDR)". It is kept
	// while the link is down.
	Rate string
	// LinkLayer is "InfiniBand" (or "Ethernet" for a RoCE port).
	LinkLayer string
	// LID and SMLID are the port's and the subnet manager's LIDs.
	LID, SMLID uint16
	// CapMask is the port capability mask (ibstat "Capability mask").
	CapMask uint32
	// GUID is the port GUID; gids/0 is fe80::/64 followed by it.
	GUID uint64

	mu    sync.Mutex
	state PortState
	phys  PhysState
	c     [numCounters]uint64
	// xmitBytes and rcvBytes are the data counters in bytes; the files hold
	// them in 4-byte words.
	xmitBytes, rcvBytes uint64
	// Remainders that turn bytes into request counts without drift.
	writeAcc, readAcc uint64
	rng               *rand.Rand
}

func newPort(num int, seed uint64) *Port {
	return &Port{
		Num:       num,
		Rate:      "400 Gb/sec (4X NDR)",
		LinkLayer: "InfiniBand",
		state:     StateActive,
		phys:      PhysLinkUp,
		rng:       rand.New(rand.NewPCG(seed, uint64(num))),
	}
}

// State returns the logical and physical link state.
func (p *Port) State() (PortState, PhysState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.phys
}

// Up reports whether the port is ACTIVE with its physical link up.
func (p *Port) Up() bool {
	s, ph := p.State()
	return s == StateActive && ph == PhysLinkUp
}

// Advance moves the port through dt of traffic: txBytes sent and rxBytes received.
// Packets are derived from bytes (4 KiB MTU, at least one packet per direction
// that carried data), RDMA request counters grow with the bytes, and
// port_xmit_wait grows when the link runs above 70% of its rate. A port that is
// not ACTIVE moves no traffic: nothing changes. When dt > 0, traffic is capped at
// what the link rate carries in dt.
func (p *Port) Advance(dt time.Duration, txBytes, rxBytes uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != StateActive || p.phys != PhysLinkUp {
		return
	}
	var capBytes float64
	if dt > 0 {
		capBytes = rateBytesPerSec(p.Rate) * dt.Seconds()
		if capBytes > 0 {
			txBytes = min(txBytes, uint64(capBytes))
			rxBytes = min(rxBytes, uint64(capBytes))
		}
	}
	p.xmitBytes = satAdd(p.xmitBytes, txBytes, ^uint64(0))
	p.rcvBytes = satAdd(p.rcvBytes, rxBytes, ^uint64(0))

	txPackets, rxPackets := ceilDiv(txBytes, mtu), ceilDiv(rxBytes, mtu)
	p.add(cPortXmitPackets, txPackets)
	p.add(cUnicastXmitPackets, txPackets)
	p.add(cPortRcvPackets, rxPackets)
	p.add(cUnicastRcvPackets, rxPackets)

	p.writeAcc += rxBytes
	p.add(cRxWriteRequests, p.writeAcc/writeRequestBytes)
	p.writeAcc %= writeRequestBytes
	p.readAcc += txBytes
	p.add(cRxReadRequests, p.readAcc/readRequestBytes)
	p.readAcc %= readRequestBytes

	if capBytes > 0 {
		if util := float64(txBytes) / capBytes; util > waitFromUtil {
			// One tick per microsecond of credit starvation, scaled by how far
			// above the threshold the link runs.
			frac := (util - waitFromUtil) / (1 - waitFromUtil)
			p.add(cPortXmitWait, uint64(frac*float64(dt.Microseconds())))
		}
	}
}

// SetDown takes the link down (state 1: DOWN, phys_state 2: Polling, as when the
// cable or the peer is lost) or brings it back up (4: ACTIVE, 5: LinkUp). Going
// down from up counts one link_downed. The rate is kept.
func (p *Port) SetDown(down bool) {
	if down {
		p.setDown(PhysPolling)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state, p.phys = StateActive, PhysLinkUp
}

// SetDisabled takes the link down administratively (1: DOWN, 3: Disabled), or
// brings it back up like SetDown(false).
func (p *Port) SetDisabled(disabled bool) {
	if disabled {
		p.setDown(PhysDisabled)
		return
	}
	p.SetDown(false)
}

func (p *Port) setDown(phys PhysState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != StateDown {
		p.add(cLinkDowned, 1)
	}
	p.state, p.phys = StateDown, phys
}

// Flap takes an up link down and back up at once: link_downed +1, and half of the
// time link_error_recovery +1 (the port tried to recover before it gave up). The
// port ends ACTIVE; flapping a port that is already down just brings it up.
func (p *Port) Flap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == StateActive {
		p.add(cLinkDowned, 1)
		if p.rng.IntN(2) == 0 {
			p.add(cLinkErrorRecovery, 1)
		}
	}
	p.state, p.phys = StateActive, PhysLinkUp
}

// AddSymbolErrors adds a burst of n physical-layer symbol errors; about one in
// four lands inside a packet and also counts as a port_rcv_errors.
func (p *Port) AddSymbolErrors(n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(cSymbolError, n)
	p.add(cPortRcvErrors, ceilDiv(n, 4))
}

// Add adds n to the counter file called name (a name from CounterNames, in the
// file's own unit: port_xmit_data and port_rcv_data count 4-byte words). Use it to
// inject faults the other methods do not model, or to give a port the non-zero
// history a long-running node carries. Counters saturate at their hardware width.
func (p *Port) Add(name string, n uint64) error {
	c, ok := counterByName[name]
	if !ok {
		return fmt.Errorf("unknown InfiniBand counter %q", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch c {
	case cPortXmitData:
		p.xmitBytes = satAdd(p.xmitBytes, satMul4(n), ^uint64(0))
	case cPortRcvData:
		p.rcvBytes = satAdd(p.rcvBytes, satMul4(n), ^uint64(0))
	default:
		p.add(c, n)
	}
	return nil
}

// Counter returns the value the counter file called name holds (data counters in
// 4-byte words, as written), and whether name is a counter this port writes.
func (p *Port) Counter(name string) (uint64, bool) {
	c, ok := counterByName[name]
	if !ok {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.value(c), true
}

// add adds n to c, saturating at the counter's width. p.mu must be held.
func (p *Port) add(c counter, n uint64) {
	p.c[c] = satAdd(p.c[c], n, c.limit())
}

// value returns the file value of c. p.mu must be held.
func (p *Port) value(c counter) uint64 {
	switch c {
	case cPortXmitData:
		return p.xmitBytes / 4
	case cPortRcvData:
		return p.rcvBytes / 4
	}
	return p.c[c]
}

// portSnapshot is what WriteSysfs renders for one port.
type portSnapshot struct {
	num       int
	state     PortState
	phys      PhysState
	rate      string
	linkLayer string
	lid       uint16
	smLID     uint16
	capMask   uint32
	guid      uint64
	values    [numCounters]uint64
}

func (p *Port) snapshot() portSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := portSnapshot{
		num: p.Num, state: p.state, phys: p.phys, rate: p.Rate, linkLayer: p.LinkLayer,
		lid: p.LID, smLID: p.SMLID, capMask: p.CapMask, guid: p.GUID,
	}
	for c := range counter(numCounters) {
		s.values[c] = p.value(c)
	}
	return s
}

// rateBytesPerSec parses "400 Gb/sec (4X NDR)" into bytes per second, the way
// procfs does (Gb/s × 125,000,000). It returns 0 when the text does not parse.
func rateBytesPerSec(rate string) float64 {
	num, _, _ := strings.Cut(strings.TrimSpace(rate), " ")
	gbps, err := strconv.ParseFloat(num, 64)
	if err != nil || gbps < 0 {
		return 0
	}
	return gbps * 125e6
}

func satAdd(a, b, limit uint64) uint64 {
	if a >= limit || b >= limit-a {
		return limit
	}
	return a + b
}

func satMul4(n uint64) uint64 {
	if n > ^uint64(0)/4 {
		return ^uint64(0)
	}
	return n * 4
}

func ceilDiv(n, d uint64) uint64 {
	if n == 0 {
		return 0
	}
	return (n-1)/d + 1
}
