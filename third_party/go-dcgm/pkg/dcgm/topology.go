package dcgm

/*
#include "dcgm_agent.h"
#include "dcgm_structs.h"
*/
import "C"

import (
	"fmt"
	"math/bits"
	"unsafe"
)

const (
	dcgmTopologyPCIPathMask uint64 = 0xFF
	maxNVLinkCount          uint   = 36
)

// P2PLinkType represents the type of peer-to-peer connection between GPUs
type P2PLinkType uint

const (
	// P2PLinkUnknown represents an unknown link type
	P2PLinkUnknown P2PLinkType = iota
	// P2PLinkCrossCPU represents a connection across different CPUs
	P2PLinkCrossCPU
	// P2PLinkSameCPU represents a connection within the same CPU
	P2PLinkSameCPU
	// P2PLinkHostBridge represents a connection through the host bridge
	P2PLinkHostBridge
	// P2PLinkMultiSwitch represents a connection through multiple PCIe switches
	P2PLinkMultiSwitch
	// P2PLinkSingleSwitch represents a connection through a single PCIe switch
	P2PLinkSingleSwitch
	// P2PLinkSameBoard represents a connection on the same board
	P2PLinkSameBoard
	// SingleNVLINKLink represents a single NVLINK connection
	SingleNVLINKLink
	// TwoNVLINKLinks represents two NVLINK connections
	TwoNVLINKLinks
	// ThreeNVLINKLinks represents three NVLINK connections
	ThreeNVLINKLinks
	// FourNVLINKLinks represents four NVLINK connections
	FourNVLINKLinks
)

// PCIPaths returns a string representation of the P2P link type
func (l P2PLinkType) PCIPaths() string {
	switch l {
	case P2PLinkSameBoard:
		return "PSB"
	case P2PLinkSingleSwitch:
		return "PIX"
	case P2PLinkMultiSwitch:
		return "PXB"
	case P2PLinkHostBridge:
		return "PHB"
	case P2PLinkSameCPU:
		return "NODE"
	case P2PLinkCrossCPU:
		return "SYS"
	case SingleNVLINKLink:
		return "NV1"
	case TwoNVLINKLinks:
		return "NV2"
	case ThreeNVLINKLinks:
		return "NV3"
	case FourNVLINKLinks:
		return "NV4"
	case P2PLinkUnknown:
	}
	if count, ok := l.nvLinkCount(); ok {
		return fmt.Sprintf("NV%d", count)
	}
	return "N/A"
}

func (l P2PLinkType) nvLinkCount() (uint, bool) {
	if l < SingleNVLINKLink {
		return 0, false
	}
	count := uint(l-SingleNVLINKLink) + 1
	if count > maxNVLinkCount {
		return 0, false
	}
	return count, true
}

func nvLinkP2PLinkType(count uint) P2PLinkType {
	return P2PLinkType(uint(SingleNVLINKLink) + count - 1)
}

// P2PLink contains information about a peer-to-peer connection
type P2PLink struct {
	// GPU is the ID of the GPU
	GPU uint
	// BusID is the PCIe bus ID of the GPU
	BusID string
	// Link is the type of P2P connection
	Link P2PLinkType
}

func getP2PLink(path uint64) P2PLinkType {
	if count, ok := nvLinkCountFromPath(path); ok {
		return nvLinkP2PLinkType(count)
	}

	switch path & dcgmTopologyPCIPathMask {
	case uint64(C.DCGM_TOPOLOGY_BOARD):
		return P2PLinkSameBoard
	case uint64(C.DCGM_TOPOLOGY_SINGLE):
		return P2PLinkSingleSwitch
	case uint64(C.DCGM_TOPOLOGY_MULTIPLE):
		return P2PLinkMultiSwitch
	case uint64(C.DCGM_TOPOLOGY_HOSTBRIDGE):
		return P2PLinkHostBridge
	case uint64(C.DCGM_TOPOLOGY_CPU):
		return P2PLinkSameCPU
	case uint64(C.DCGM_TOPOLOGY_SYSTEM):
		return P2PLinkCrossCPU
	}
	return P2PLinkUnknown
}

func nvLinkCountFromPath(path uint64) (uint, bool) {
	nvLinkPath := path &^ dcgmTopologyPCIPathMask
	if nvLinkPath == 0 || bits.OnesCount64(nvLinkPath) != 1 {
		return 0, false
	}

	// DCGM encodes NVLink counts as one-hot bits 8..43, where bit 8 means NV1.
	count := uint(bits.TrailingZeros64(nvLinkPath) - 7)
	if count < 1 || count > maxNVLinkCount {
		return 0, false
	}
	return count, true
}

func peerEntities(links []P2PLink) []GroupEntityPair {
	entities := make([]GroupEntityPair, len(links))
	for i := range links {
		entities[i] = GroupEntityPair{EntityGroupId: FE_GPU, EntityId: links[i].GPU}
	}
	return entities
}

func populatePeerBusIDs(links []P2PLink, values []FieldValue_v2) error {
	busIDs := make(map[uint]string, len(values))
	for _, value := range values {
		if value.EntityGroupId != FE_GPU || value.FieldID != DCGM_FI_DEV_PCI_BUS_ID {
			continue
		}
		if value.Status != DCGM_ST_OK {
			return fmt.Errorf("get bus ID for peer GPU %d: field status %d", value.EntityID, value.Status)
		}
		busIDs[value.EntityID] = value.String()
	}

	for i := range links {
		busID, ok := busIDs[links[i].GPU]
		if !ok {
			return fmt.Errorf("get bus ID for peer GPU %d: not returned by DCGM", links[i].GPU)
		}
		links[i].BusID = busID
	}
	return nil
}

func getDeviceTopology(gpuID uint) (links []P2PLink, err error) {
	var topology C.dcgmDeviceTopology_v2
	topology.version = makeVersion2(unsafe.Sizeof(topology))

	result := C.dcgmGetDeviceTopology(handle.handle, C.uint(gpuID), &topology)
	if result == C.DCGM_ST_NOT_SUPPORTED {
		return links, nil
	}
	if result != C.DCGM_ST_OK {
		return links, &Error{msg: C.GoString(C.errorString(result)), Code: result}
	}

	links = make([]P2PLink, topology.numGpus)
	for i := uint(0); i < uint(topology.numGpus); i++ {
		links[i].GPU = uint(topology.gpuPaths[i].gpuId)
		links[i].Link = getP2PLink(uint64(topology.gpuPaths[i].path))
	}
	if len(links) == 0 {
		return
	}

	values, err := EntitiesGetLatestValues(
		peerEntities(links),
		[]Short{DCGM_FI_DEV_PCI_BUS_ID},
		DCGM_FV_FLAG_LIVE_DATA,
	)
	if err != nil {
		return nil, fmt.Errorf("get peer GPU bus IDs: %w", err)
	}
	if err := populatePeerBusIDs(links, values); err != nil {
		return nil, err
	}
	return
}

// Link_State represents the state of an NVLINK connection
type Link_State uint

const (
	// LS_NOT_SUPPORTED indicates the link is unsupported (Default for GPUs)
	LS_NOT_SUPPORTED Link_State = iota
	// LS_DISABLED indicates the link is supported but disabled (Default for NvSwitches)
	LS_DISABLED
	// LS_DOWN indicates the link is down (inactive)
	LS_DOWN
	// LS_UP indicates the link is up (active)
	LS_UP
)

// NvLinkStatus contains information about an NVLINK connection status
type NvLinkStatus struct {
	// ParentId is the ID of the parent entity (GPU or NVSwitch)
	ParentId uint
	// ParentType is the type of the parent entity
	ParentType Field_Entity_Group
	// State is the current state of the NVLINK
	State Link_State
	// Index is the link index number
	Index uint
}

func getNvLinkLinkStatus() ([]NvLinkStatus, error) {
	var linkStatus C.dcgmNvLinkStatus_v5
	linkStatus.version = makeVersion5(unsafe.Sizeof(linkStatus))

	result := C.dcgmGetNvLinkLinkStatus(handle.handle, &linkStatus)
	if result == C.DCGM_ST_NOT_SUPPORTED {
		return nil, nil
	}

	if result != C.DCGM_ST_OK {
		return nil, &Error{msg: C.GoString(C.errorString(result)), Code: result}
	}

	links := make([]NvLinkStatus, linkStatus.numGpus*C.DCGM_NVLINK_MAX_LINKS_PER_GPU+linkStatus.numNvSwitches*C.DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH)

	idx := 0
	for i := uint(0); i < uint(linkStatus.numGpus); i++ {
		for j := 0; j < int(C.DCGM_NVLINK_MAX_LINKS_PER_GPU); j++ {
			link := NvLinkStatus{
				uint(linkStatus.gpus[i].entityId),
				FE_GPU,
				Link_State(linkStatus.gpus[i].linkState[j]),
				uint(j),
			}

			links[idx] = link
			idx++
		}
	}

	for i := uint(0); i < uint(linkStatus.numNvSwitches); i++ {
		for j := 0; j < C.DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH; j++ {
			link := NvLinkStatus{
				uint(linkStatus.nvSwitches[i].entityId),
				FE_SWITCH,
				Link_State(linkStatus.nvSwitches[i].linkState[j]),
				uint(j),
			}

			links[idx] = link
			idx++
		}
	}

	return links, nil
}
