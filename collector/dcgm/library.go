package dcgm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// Library is the part of DCGM the source uses: the seam at the hardware boundary,
// shaped like go-dcgm's API (Init, field groups and watches, latest values, health
// watches and their incidents) and spoken in go-dcgm's own types. On a real node it
// is go-dcgm over libdcgm.so.4 (Options.Library nil); collector/simhw implements it
// per simulated node, and the source runs unchanged against either.
//
// The source calls Connect first and every other method only after Connect
// succeeded and before Disconnect; the source's state machine and a guard around
// the Library enforce that order, because go-dcgm kills the process when it is
// broken. A Library need not be safe for concurrent use: the source serializes its
// calls.
type Library interface {
	// Connect initializes DCGM: an embedded host engine, or a connection to
	// address ("host:port", "unix:///path" or "/path" of a unix socket).
	Connect(embedded bool, address string) error
	// Disconnect releases what Connect and the watches created.
	Disconnect() error
	// GPUs lists the DCGM-supported GPUs (go-dcgm's GetSupportedDevices and
	// GetDeviceInfo); the source uses each Device's GPU id and UUID.
	GPUs() ([]godcgm.Device, error)
	// WatchFields starts DCGM sampling fields on gpus every period.
	WatchFields(gpus []uint, fields []godcgm.Short, every time.Duration) error
	// WatchHealth enables the health watches of systems on gpus.
	WatchHealth(gpus []uint, systems godcgm.HealthSystem) error
	// Latest returns the latest sampled value of every field on every GPU.
	Latest(gpus []uint, fields []godcgm.Short) ([]godcgm.FieldValue_v2, error)
	// Health runs the health check of the watched systems.
	Health() (godcgm.HealthResponse, error)
}

// goDCGM is the Library on go-dcgm and libdcgm.so.4.
type goDCGM struct {
	group       godcgm.GroupHandle
	fieldGroup  godcgm.FieldHandle
	haveGroup   bool
	haveFields  bool
	fieldsWatch bool
}

// standaloneArgs turns an address into go-dcgm's Standalone arguments: the address
// and "1" when it is a unix socket, "0" when it is host:port.
func standaloneArgs(address string) []string {
	switch {
	case strings.HasPrefix(address, "unix://"):
		return []string{strings.TrimPrefix(address, "unix://"), "1"}
	case strings.HasPrefix(address, "/"):
		return []string{address, "1"}
	default:
		return []string{strings.TrimPrefix(address, "tcp://"), "0"}
	}
}

func (g *goDCGM) Connect(embedded bool, address string) (err error) {
	defer recoverInto(&err, "connect")
	if embedded {
		_, err = godcgm.Init(godcgm.Embedded)
	} else {
		_, err = godcgm.Init(godcgm.Standalone, standaloneArgs(address)...)
	}
	return err
}

func (g *goDCGM) Disconnect() (err error) {
	defer recoverInto(&err, "disconnect")
	var errs []error
	if g.fieldsWatch {
		errs = append(errs, godcgm.UnwatchFields(g.fieldGroup, g.group))
	}
	if g.haveFields {
		errs = append(errs, godcgm.FieldGroupDestroy(g.fieldGroup))
	}
	if g.haveGroup {
		errs = append(errs, godcgm.DestroyGroup(g.group))
	}
	g.haveGroup, g.haveFields, g.fieldsWatch = false, false, false
	errs = append(errs, godcgm.Shutdown())
	return errors.Join(errs...)
}

func (g *goDCGM) GPUs() (out []godcgm.Device, err error) {
	defer recoverInto(&err, "list GPUs")
	ids, err := godcgm.GetSupportedDevices()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		d, err := godcgm.GetDeviceInfo(id)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", id, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ensureGroup creates the source's GPU group once.
func (g *goDCGM) ensureGroup(gpus []uint) error {
	if g.haveGroup {
		return nil
	}
	grp, err := godcgm.CreateGroup("gpuwatch-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		return err
	}
	g.group, g.haveGroup = grp, true
	for _, id := range gpus {
		if err := godcgm.AddToGroup(grp, id); err != nil {
			return fmt.Errorf("add GPU %d to group: %w", id, err)
		}
	}
	return nil
}

func (g *goDCGM) WatchFields(gpus []uint, fields []godcgm.Short, every time.Duration) (err error) {
	defer recoverInto(&err, "watch fields")
	if err := g.ensureGroup(gpus); err != nil {
		return err
	}
	fg, err := godcgm.FieldGroupCreate("gpuwatch-prof-"+strconv.Itoa(os.Getpid()), fields)
	if err != nil {
		return err
	}
	g.fieldGroup, g.haveFields = fg, true
	// Keep two samples for at most a minute: the source only reads the latest.
	if err := godcgm.WatchFieldsWithGroupEx(fg, g.group, every.Microseconds(), 60, 2); err != nil {
		return err
	}
	g.fieldsWatch = true
	return nil
}

func (g *goDCGM) WatchHealth(gpus []uint, systems godcgm.HealthSystem) (err error) {
	defer recoverInto(&err, "set health watches")
	if err := g.ensureGroup(gpus); err != nil {
		return err
	}
	return godcgm.HealthSet(g.group, systems)
}

func (g *goDCGM) Latest(gpus []uint, fields []godcgm.Short) (_ []godcgm.FieldValue_v2, err error) {
	defer recoverInto(&err, "read fields")
	entities := make([]godcgm.GroupEntityPair, len(gpus))
	for i, id := range gpus {
		entities[i] = godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_GPU, EntityId: id}
	}
	return godcgm.EntitiesGetLatestValues(entities, fields, 0)
}

func (g *goDCGM) Health() (_ godcgm.HealthResponse, err error) {
	defer recoverInto(&err, "health check")
	if !g.haveGroup {
		return godcgm.HealthResponse{}, errors.New("no GPU group")
	}
	return godcgm.HealthCheck(g.group)
}

// recoverInto turns a Go panic in go-dcgm into an error. It cannot catch a crash in
// the C library; the conn state machine prevents those.
func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("dcgm %s: panic: %v", what, r)
	}
}

// errNotConnected is what guard answers for a call made without a connection.
var errNotConnected = errors.New("dcgm: not connected (no successful Init)")

// guard wraps a Library so that no call but Connect reaches it unless Connect has
// succeeded and Disconnect has not been called since: the last line of defence
// against go-dcgm's crash on a call after a failed Init. It is not safe for
// concurrent use; Source serializes calls with libMu.
type guard struct {
	lib Library
	up  bool
}

func (g *guard) Connect(embedded bool, address string) error {
	if g.up {
		return errors.New("dcgm: already connected")
	}
	err := g.lib.Connect(embedded, address)
	g.up = err == nil
	return err
}

func (g *guard) Disconnect() error {
	if !g.up {
		return errNotConnected
	}
	g.up = false
	return g.lib.Disconnect()
}

func (g *guard) GPUs() ([]godcgm.Device, error) {
	if !g.up {
		return nil, errNotConnected
	}
	return g.lib.GPUs()
}

func (g *guard) WatchFields(gpus []uint, fields []godcgm.Short, every time.Duration) error {
	if !g.up {
		return errNotConnected
	}
	return g.lib.WatchFields(gpus, fields, every)
}

func (g *guard) WatchHealth(gpus []uint, systems godcgm.HealthSystem) error {
	if !g.up {
		return errNotConnected
	}
	return g.lib.WatchHealth(gpus, systems)
}

func (g *guard) Latest(gpus []uint, fields []godcgm.Short) ([]godcgm.FieldValue_v2, error) {
	if !g.up {
		return nil, errNotConnected
	}
	return g.lib.Latest(gpus, fields)
}

func (g *guard) Health() (godcgm.HealthResponse, error) {
	if !g.up {
		return godcgm.HealthResponse{}, errNotConnected
	}
	return g.lib.Health()
}
