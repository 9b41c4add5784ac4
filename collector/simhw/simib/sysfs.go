package simib

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// stagingDir is where files are written before they are renamed into place. It
// sits under sysRoot (same file system, so rename is atomic) but outside every
// directory a reader lists.
const stagingDir = ".simib-staging"

// layout is where an HCA lives in the tree, as paths relative to sysRoot.
type layout struct {
	pciDir string // devices/pci0000:97/0000:97:01.0/…/0000:9c:00.0
	ibDir  string // <pciDir>/infiniband/mlx5_0
	addr   string // 0000:9c:00.0
}

func (h *HCA) layout() (layout, error) {
	if h.Name == "" || strings.ContainsAny(h.Name, "/\x00") || h.Name == "." || h.Name == ".." {
		return layout{}, fmt.Errorf("invalid InfiniBand device name %q", h.Name)
	}
	dev, err := parsePCIAddr(h.PCI.Addr)
	if err != nil {
		return layout{}, fmt.Errorf("%s: %w", h.Name, err)
	}
	chain := make([]string, 0, len(h.PCI.Parents)+1)
	rootBus := dev.bus
	for i, p := range h.PCI.Parents {
		a, err := parsePCIAddr(p)
		if err != nil {
			return layout{}, fmt.Errorf("%s: parent bridge: %w", h.Name, err)
		}
		if a.domain != dev.domain {
			return layout{}, fmt.Errorf("%s: parent bridge %s is in another PCI domain than %s", h.Name, p, h.PCI.Addr)
		}
		if i == 0 {
			rootBus = a.bus
		}
		chain = append(chain, a.canonicalString)
	}
	chain = append(chain, dev.canonicalString)
	root := fmt.Sprintf("pci%04x:%02x", dev.domain, rootBus)
	pciDir := path.Join("devices", root, path.Join(chain...))
	return layout{
		pciDir: pciDir,
		ibDir:  path.Join(pciDir, "infiniband", h.Name),
		addr:   dev.canonicalString,
	}, nil
}

// file is one sysfs attribute: a path relative to sysRoot and its content.
type file struct {
	rel, content string
}

// WriteSysfs writes the HCA under sysRoot (the directory that stands for /sys):
// its class/infiniband entry, its device directory with ports, counters and
// hw_counters, and its PCI function with the device symlink and
// bus/pci/devices entry. The first call for a sysRoot creates everything; later
// calls rewrite only the files whose content changed. Each file is replaced
// atomically.
func (h *HCA) WriteSysfs(sysRoot string) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()

	l, err := h.layout()
	if err != nil {
		return err
	}
	if h.root != sysRoot || h.written == nil {
		if err := h.createTree(sysRoot, l); err != nil {
			return err
		}
		h.root = sysRoot
		h.written = make(map[string]string)
	}
	staging := filepath.Join(sysRoot, stagingDir)
	for _, f := range h.render(l) {
		if old, ok := h.written[f.rel]; ok && old == f.content {
			continue
		}
		if err := writeAtomic(staging, filepath.Join(sysRoot, filepath.FromSlash(f.rel)), f.content); err != nil {
			return fmt.Errorf("write %s: %w", h.Name, err)
		}
		h.written[f.rel] = f.content
	}
	return nil
}

// createTree makes the directories and symlinks of the HCA's tree.
func (h *HCA) createTree(sysRoot string, l layout) error {
	dirs := []string{
		stagingDir,
		"class/infiniband",
		"bus/pci/devices",
		path.Join(l.ibDir, "ports"),
	}
	for _, p := range h.Ports {
		port := path.Join(l.ibDir, "ports", strconv.Itoa(p.Num))
		dirs = append(dirs, path.Join(port, dirCounters), path.Join(port, dirHWCounters), path.Join(port, "gids"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(sysRoot, filepath.FromSlash(d)), 0o755); err != nil {
			return fmt.Errorf("create %s tree: %w", h.Name, err)
		}
	}
	staging := filepath.Join(sysRoot, stagingDir)
	links := []struct{ at, target string }{
		{path.Join("class/infiniband", h.Name), path.Join("../../", l.ibDir)},
		{path.Join("bus/pci/devices", l.addr), path.Join("../../../", l.pciDir)},
		{path.Join(l.ibDir, "device"), path.Join("../../..", l.addr)},
	}
	for _, ln := range links {
		if err := ensureSymlink(staging, filepath.Join(sysRoot, filepath.FromSlash(ln.at)), ln.target); err != nil {
			return fmt.Errorf("create %s tree: %w", h.Name, err)
		}
	}
	return nil
}

// render returns every file of the HCA with its current content.
func (h *HCA) render(l layout) []file {
	hex := func(v uint64) string { return "0x" + strconv.FormatUint(v, 16) + "\n" }
	dec := func(v int64) string { return strconv.FormatInt(v, 10) + "\n" }
	pci := h.PCI
	files := []file{
		{path.Join(l.pciDir, "vendor"), fmt.Sprintf("0x%04x\n", pci.Vendor)},
		{path.Join(l.pciDir, "device"), fmt.Sprintf("0x%04x\n", pci.Device)},
		{path.Join(l.pciDir, "subsystem_vendor"), fmt.Sprintf("0x%04x\n", pci.SubsystemVendor)},
		{path.Join(l.pciDir, "subsystem_device"), fmt.Sprintf("0x%04x\n", pci.SubsystemDevice)},
		{path.Join(l.pciDir, "class"), fmt.Sprintf("0x%06x\n", pci.Class)},
		{path.Join(l.pciDir, "revision"), fmt.Sprintf("0x%02x\n", pci.Revision)},
		{path.Join(l.pciDir, "numa_node"), dec(int64(pci.NUMANode))},
	}
	if pci.LinkSpeed != "" {
		files = append(files,
			file{path.Join(l.pciDir, "current_link_speed"), pci.LinkSpeed + "\n"},
			file{path.Join(l.pciDir, "max_link_speed"), pci.LinkSpeed + "\n"})
	}
	if pci.LinkWidth > 0 {
		files = append(files,
			file{path.Join(l.pciDir, "current_link_width"), dec(int64(pci.LinkWidth))},
			file{path.Join(l.pciDir, "max_link_width"), dec(int64(pci.LinkWidth))})
	}
	if pci.LocalCPUList != "" {
		files = append(files, file{path.Join(l.pciDir, "local_cpulist"), pci.LocalCPUList + "\n"})
	}

	ib := l.ibDir
	files = append(files,
		file{path.Join(ib, "board_id"), h.BoardID + "\n"},
		file{path.Join(ib, "fw_ver"), h.FWVer + "\n"},
		file{path.Join(ib, "hca_type"), h.HCAType + "\n"},
		file{path.Join(ib, "hw_rev"), h.HWRev + "\n"},
		file{path.Join(ib, "node_guid"), formatGUID(h.NodeGUID) + "\n"},
		file{path.Join(ib, "sys_image_guid"), formatGUID(h.SysImageGUID) + "\n"},
		file{path.Join(ib, "node_type"), "1: CA\n"},
		file{path.Join(ib, "node_desc"), h.NodeDesc + "\n"},
	)
	for _, p := range h.Ports {
		s := p.snapshot()
		dir := path.Join(ib, "ports", strconv.Itoa(s.num))
		files = append(files,
			file{path.Join(dir, "state"), fmt.Sprintf("%d: %s\n", s.state, s.state)},
			file{path.Join(dir, "phys_state"), fmt.Sprintf("%d: %s\n", s.phys, s.phys)},
			file{path.Join(dir, "rate"), s.rate + "\n"},
			file{path.Join(dir, "link_layer"), s.linkLayer + "\n"},
			file{path.Join(dir, "lid"), hex(uint64(s.lid))},
			file{path.Join(dir, "lid_mask_count"), "0\n"},
			file{path.Join(dir, "sm_lid"), hex(uint64(s.smLID))},
			file{path.Join(dir, "sm_sl"), "0\n"},
			file{path.Join(dir, "cap_mask"), fmt.Sprintf("0x%08x\n", s.capMask)},
			file{path.Join(dir, "gids", "0"), "fe80:0000:0000:0000:" + formatGUID(s.guid) + "\n"},
		)
		for c, d := range counterDefs {
			files = append(files, file{path.Join(dir, d.dir, d.name), strconv.FormatUint(s.values[c], 10) + "\n"})
		}
	}
	return files
}

// writeAtomic replaces target with content: it writes a file in staging and
// renames it over target, so a reader sees the old or the new content, never a
// mix.
func writeAtomic(staging, target, content string) error {
	f, err := os.CreateTemp(staging, "attr-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.WriteString(content)
	cerr := f.Chmod(0o444)
	if err := errors.Join(werr, cerr, f.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// ensureSymlink makes at a symlink to target, replacing a symlink that points
// elsewhere (atomically, through staging).
func ensureSymlink(staging, at, target string) error {
	if cur, err := os.Readlink(at); err == nil && cur == target {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// at exists but is not a symlink (or cannot be read): do not clobber it.
		return fmt.Errorf("cannot link %s: %w", at, err)
	}
	tmp, err := os.MkdirTemp(staging, "link-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ln := filepath.Join(tmp, "l")
	if err := os.Symlink(target, ln); err != nil {
		return err
	}
	return os.Rename(ln, at)
}
