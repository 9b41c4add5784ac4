// Package pcitest writes sysfs PCI trees from real machines for tests: a GPU node
// from a real `lspci -nn` listing, and a CPU node from prometheus/procfs's sysfs
// fixture. testdata/README.md names the sources.
package pcitest

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// LSPCIA100 is `lspci -nn` of a real 8× A100 SXM4 node with 6 NVSwitches.
//
//go:embed testdata/lspci.nn.a100
var LSPCIA100 []byte

// ProcfsPCI is the PCI part of prometheus/procfs's sysfs fixture, in ttar form:
// three functions, none of them NVIDIA's.
//
//go:embed testdata/procfs-pci.ttar
var ProcfsPCI []byte

// The real A100 node's counts.
const (
	A100GPUs       = 8
	A100NVSwitches = 6
)

// lspciLine is "0001:00:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2] (rev a1)".
var lspciLine = regexp.MustCompile(`(?m)^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) .*\[([0-9a-f]{4})\]: .*\[([0-9a-f]{4}):([0-9a-f]{4})\]`)

// WriteLSPCI writes a sysfs PCI tree under root from `lspci -nn` output: for each
// function, devices/pci<domain>:<bus>/<addr>/{vendor,device,class} and the
// bus/pci/devices/<addr> link to it, as the kernel lays them out (without the
// bridges between: the listing does not say which they are). drop lists
// addresses to leave out, as a GPU gone from the bus would be. It returns how
// many functions it wrote.
func WriteLSPCI(root string, lspci []byte, drop ...string) (int, error) {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(lspci))
	for sc.Scan() {
		m := lspciLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		addr := m[1]
		skip := false
		for _, d := range drop {
			skip = skip || d == addr
		}
		if skip {
			continue
		}
		rel := path.Join("devices", "pci"+addr[:7], addr)
		files := map[string]string{
			"vendor": "0x" + m[3] + "\n",
			"device": "0x" + m[4] + "\n",
			"class":  "0x" + m[2] + "00\n",
		}
		if err := writeFunction(root, rel, addr, files); err != nil {
			return n, err
		}
		n++
	}
	return n, sc.Err()
}

func writeFunction(root, rel, addr string, files map[string]string) error {
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	links := filepath.Join(root, "bus", "pci", "devices")
	if err := os.MkdirAll(links, 0o755); err != nil {
		return err
	}
	return os.Symlink(path.Join("../../..", rel), filepath.Join(links, addr))
}

// WriteA100 writes the real A100 node's tree under root (8 GPUs, 6 NVSwitches);
// drop leaves functions out.
func WriteA100(root string, drop ...string) error {
	_, err := WriteLSPCI(root, LSPCIA100, drop...)
	return err
}

// A100GPUAddresses lists the real A100 node's GPUs.
func A100GPUAddresses() []string {
	var out []string
	for _, m := range lspciLine.FindAllStringSubmatch(string(LSPCIA100), -1) {
		if m[2] == "0302" {
			out = append(out, m[1])
		}
	}
	return out
}

// WriteCPUNode writes procfs's real PCI tree (no NVIDIA function) under root:
// what `gpuwatch check` sees on a CPU node.
func WriteCPUNode(root string) error {
	return ExtractTTAR(root, "fixtures/sys", ProcfsPCI)
}

// ExtractTTAR writes the entries of a ttar archive (prometheus/procfs's text
// archive: Directory, Path with Lines or SymlinkTo) that lie under prefix into
// root, with prefix removed.
func ExtractTTAR(root, prefix string, archive []byte) error {
	lines := strings.Split(string(archive), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		var name string
		switch {
		case strings.HasPrefix(l, "Directory: "):
			name = strings.TrimPrefix(l, "Directory: ")
			if rel, ok := under(name, prefix); ok {
				if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
					return err
				}
			}
			continue
		case strings.HasPrefix(l, "Path: "):
			name = strings.TrimPrefix(l, "Path: ")
		default:
			continue
		}
		rel, ok := under(name, prefix)
		if i+1 >= len(lines) {
			return fmt.Errorf("ttar: %s: truncated", name)
		}
		next := lines[i+1]
		switch {
		case strings.HasPrefix(next, "SymlinkTo: "):
			i++
			if !ok {
				continue
			}
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(strings.TrimPrefix(next, "SymlinkTo: "), p); err != nil {
				return err
			}
		case strings.HasPrefix(next, "Lines: "):
			n, err := strconv.Atoi(strings.TrimPrefix(next, "Lines: "))
			if err != nil || i+2+n > len(lines) {
				return fmt.Errorf("ttar: %s: bad %q", name, next)
			}
			body := strings.Join(lines[i+2:i+2+n], "\n")
			i += 1 + n
			if !ok {
				continue
			}
			body = strings.ReplaceAll(body, "NULLBYTE", "\x00")
			if b, cut := strings.CutSuffix(body, "EOF"); cut {
				body = b
			} else if n > 0 {
				body += "\n"
			}
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
		default:
			return fmt.Errorf("ttar: %s: unknown entry %q", name, next)
		}
	}
	return nil
}

func under(name, prefix string) (string, bool) {
	if name == prefix {
		return ".", true
	}
	rel, ok := strings.CutPrefix(name, prefix+"/")
	return filepath.FromSlash(rel), ok
}
