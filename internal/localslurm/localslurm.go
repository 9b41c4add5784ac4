package localslurm

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"
)

//go:embed testdata/slurm.conf.tmpl testdata/gres.conf.tmpl testdata/reboot.sh.tmpl
var templates embed.FS

// ErrUnavailable is wrapped by Launch's error when the cluster cannot run here at
// all (a binary is missing, or not root), as opposed to failing to start.
var ErrUnavailable = errors.New("real slurm unavailable")

// Options shape the cluster. The zero value is the one gpuwatch's tests use: four
// nodes gpu01…gpu04 with eight H100 GPUs, 16 cores and 64 000 MB each, in
// partition "gpu". Scheduling is priority/multifactor with every weight 0, so a
// job's priority is its SiteFactor (which Slurm adds unweighted).
type Options struct {
	// Nodes is the number of nodes, named gpu01, gpu02, … (default 4, at most 99).
	Nodes int
	// GPUsPerNode is each node's GPU count (default 8, at most 64); GPUType their
	// Slurm GRES type (default "h100").
	GPUsPerNode int
	GPUType     string
	// CPUsPerNode is each node's core count, split over two sockets (default 16,
	// even); MemoryMB its RealMemory (default 64000).
	CPUsPerNode int
	MemoryMB    int
	// Partition is the one (default) partition holding every node (default "gpu").
	Partition string
	// ResumeTimeout is how long slurmctld waits for a rebooting node before it
	// marks it DOWN "reboot timed out" (default 60 s); RebootDelay how long the
	// fake reboot takes (default 1 s).
	ResumeTimeout time.Duration
	RebootDelay   time.Duration
	// NoRebootProgram leaves RebootProgram out of slurm.conf, as on many real
	// clusters: slurmctld then refuses `scontrol reboot`.
	NoRebootProgram bool
	// MessageTimeout is slurm.conf's MessageTimeout, which also bounds how long a
	// client command waits for an unreachable controller (default 5 s).
	MessageTimeout time.Duration
	// StartTimeout bounds the wait for the controller to answer and every node to
	// be idle (default 60 s).
	StartTimeout time.Duration
	// TopologyConf, when set, is written as topology.conf next to slurm.conf, and
	// slurm.conf names TopologyPlugin (default "topology/tree" then). The nodes it
	// names should be the cluster's (gpu01…): Slurm 22.05 refuses to start on a
	// switch whose Nodes= names a node slurm.conf lacks.
	TopologyConf string
	// TopologyPlugin is slurm.conf's TopologyPlugin: "" (Slurm's default,
	// topology/none, unless TopologyConf is set), "topology/none" or
	// "topology/tree". Slurm 22.05 has no topology/block (added in 23.11), so it is
	// refused here rather than left to a slurmctld that cannot load it.
	TopologyPlugin string
	// FutureNodes is a Slurm host list of nodes slurm.conf also defines, with
	// State=FUTURE: known to slurmctld by name (so a topology.conf may name them)
	// but never started, never in sinfo, never given a job. Empty for none; it must
	// not name gpu01… .
	FutureNodes string
}

func (o Options) withDefaults() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Nodes, 4)
	def(&o.GPUsPerNode, 8)
	def(&o.CPUsPerNode, 16)
	def(&o.MemoryMB, 64000)
	if o.GPUType == "" {
		o.GPUType = "h100"
	}
	if o.Partition == "" {
		o.Partition = "gpu"
	}
	if o.ResumeTimeout == 0 {
		o.ResumeTimeout = 60 * time.Second
	}
	if o.RebootDelay == 0 {
		o.RebootDelay = time.Second
	}
	if o.MessageTimeout == 0 {
		o.MessageTimeout = 5 * time.Second
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.TopologyPlugin == "" && o.TopologyConf != "" {
		o.TopologyPlugin = "topology/tree"
	}
	switch o.TopologyPlugin {
	case "", "topology/none", "topology/tree":
	case "topology/block":
		return o, fmt.Errorf("localslurm: Options.TopologyPlugin %q: Slurm 22.05, which these tests run, has no topology/block (added in Slurm 23.11)", o.TopologyPlugin)
	default:
		return o, fmt.Errorf("localslurm: Options.TopologyPlugin %q: want topology/none or topology/tree", o.TopologyPlugin)
	}
	if strings.ContainsAny(o.FutureNodes, " \t\n:=()\"'#$`\\") {
		return o, fmt.Errorf("localslurm: Options.FutureNodes %q: want a Slurm host list such as node[1-8],login1", o.FutureNodes)
	}
	if o.TopologyConf != "" && o.TopologyPlugin != "topology/tree" {
		return o, fmt.Errorf("localslurm: Options.TopologyConf is set but TopologyPlugin is %q: want topology/tree", o.TopologyPlugin)
	}
	switch {
	case o.Nodes < 1 || o.Nodes > 99:
		return o, fmt.Errorf("localslurm: Options.Nodes %d: want 1 to 99", o.Nodes)
	case o.GPUsPerNode < 1 || o.GPUsPerNode > 64:
		return o, fmt.Errorf("localslurm: Options.GPUsPerNode %d: want 1 to 64", o.GPUsPerNode)
	case o.CPUsPerNode < 2 || o.CPUsPerNode%2 != 0:
		return o, fmt.Errorf("localslurm: Options.CPUsPerNode %d: want an even number of at least 2", o.CPUsPerNode)
	case o.MemoryMB < 1:
		return o, fmt.Errorf("localslurm: Options.MemoryMB %d: want at least 1", o.MemoryMB)
	case o.ResumeTimeout < time.Second || o.MessageTimeout < time.Second:
		return o, fmt.Errorf("localslurm: ResumeTimeout %s, MessageTimeout %s: want at least 1s each", o.ResumeTimeout, o.MessageTimeout)
	case o.RebootDelay < 0:
		return o, fmt.Errorf("localslurm: Options.RebootDelay %s: want at least 0", o.RebootDelay)
	}
	for _, s := range []string{o.GPUType, o.Partition} {
		if s == "" || strings.ContainsAny(s, " \t\n:,=()[]\"'#$`\\") {
			return o, fmt.Errorf("localslurm: name %q: want a plain word", s)
		}
	}
	return o, nil
}

// binaries the cluster runs; all must be on PATH.
var binaries = []string{"slurmctld", "slurmd", "munged", "sbatch", "scontrol", "sinfo", "squeue", "sprio", "scancel"}

// Cluster is one running single-host Slurm cluster.
type Cluster struct {
	opts   Options
	dir    string
	conf   string
	host   string
	port   int // slurmctld
	nodes  []node
	bins   map[string]string
	munged *exec.Cmd
	mdone  chan struct{}

	mu   sync.Mutex
	pids map[string]int // daemon ("slurmctld", "slurmd-gpu01") → last PID seen
}

type node struct {
	Name string
	Port int
}

// Launch starts a cluster outside any one test (for TestMain or Shared); the
// caller must Close it. Its error wraps ErrUnavailable when Slurm cannot run here.
func Launch(opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	bins := map[string]string{}
	var missing []string
	for _, b := range binaries {
		p, err := exec.LookPath(b)
		if err != nil {
			missing = append(missing, b)
			continue
		}
		bins[b] = p
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not on PATH (`sudo make test-deps` installs slurm-wlm and munge)", ErrUnavailable, strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: the test cluster runs slurmd and munged as root, and this is uid %d", ErrUnavailable, os.Geteuid())
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("localslurm: host name: %w", err)
	}
	host, _, _ = strings.Cut(host, ".")
	// A short directory of our own rather than t.TempDir(): munged's socket path
	// must fit a sockaddr_un (108 bytes), which a long test name can exceed.
	dir, err := os.MkdirTemp("", "realslurm-")
	if err != nil {
		return nil, fmt.Errorf("localslurm: %w", err)
	}
	ports, err := freePorts(1 + opts.Nodes)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{
		opts: opts, dir: dir, conf: filepath.Join(dir, "slurm.conf"), host: host,
		port: ports[0], bins: bins, pids: map[string]int{},
	}
	for i := range opts.Nodes {
		c.nodes = append(c.nodes, node{Name: fmt.Sprintf("gpu%02d", i+1), Port: ports[1+i]})
	}
	if err := c.launch(); err != nil {
		if cerr := c.Close(); cerr != nil {
			err = fmt.Errorf("%w (and stopping: %v)", err, cerr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) launch() error {
	for _, d := range []string{"state", "log", "run", "fakedev", "jobs", "munge"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			return fmt.Errorf("localslurm: %w", err)
		}
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(filepath.Join(c.dir, "spool", n.Name), 0o755); err != nil {
			return fmt.Errorf("localslurm: %w", err)
		}
	}
	for i := range c.opts.GPUsPerNode {
		if err := os.Symlink("/dev/null", filepath.Join(c.dir, "fakedev", fmt.Sprintf("nvidia%d", i))); err != nil {
			return fmt.Errorf("localslurm: fake GPU device: %w", err)
		}
	}
	if err := c.writeConfig(); err != nil {
		return err
	}
	if err := c.startMunge(); err != nil {
		return err
	}
	deadline := time.Now().Add(c.opts.StartTimeout)
	if err := c.startController(deadline); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.startSlurmd(n.Name, false); err != nil {
			return err
		}
	}
	var last string
	for {
		out, err := c.Output("sinfo", "-h", "-N", "-o", "%N %T")
		last = out
		if err == nil && countState(out, "idle") == len(c.nodes) {
			return nil
		}
		if err == nil && countState(out, "inval") > 0 {
			return fmt.Errorf("localslurm: slurmctld found a node's configuration invalid: sinfo says %q\n%s", out, c.Logs())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localslurm: nodes not all idle after %s: sinfo says %q (%v)\n%s", c.opts.StartTimeout, last, err, c.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countState(sinfo, state string) int {
	n := 0
	for _, line := range strings.Split(sinfo, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == state {
			n++
		}
	}
	return n
}

// templateData is what the embedded templates see.
type templateData struct {
	Options
	Dir, Conf, Host, MungeSocket, Slurmd string
	NodeList                             string // gpu[01-04]
	CtldPort                             int
	Nodes                                []node
	CPUs, CoresPerSocket, GPUs, LastGPU  int
	ResumeTimeout, MessageTimeout        int // seconds
	RebootDelay                          string
}

func (c *Cluster) writeConfig() error {
	d := templateData{
		Options: c.opts, Dir: c.dir, Conf: c.conf, Host: c.host,
		NodeList:    fmt.Sprintf("gpu[01-%02d]", len(c.nodes)),
		MungeSocket: c.mungeSocket(), Slurmd: c.bins["slurmd"], CtldPort: c.port, Nodes: c.nodes,
		CPUs: c.opts.CPUsPerNode, CoresPerSocket: c.opts.CPUsPerNode / 2,
		GPUs: c.opts.GPUsPerNode, LastGPU: c.opts.GPUsPerNode - 1,
		ResumeTimeout:  int(c.opts.ResumeTimeout.Round(time.Second) / time.Second),
		MessageTimeout: int(c.opts.MessageTimeout.Round(time.Second) / time.Second),
		RebootDelay:    strconv.FormatFloat(c.opts.RebootDelay.Seconds(), 'f', 3, 64),
	}
	for _, f := range []struct {
		tmpl, out string
		mode      os.FileMode
	}{
		{"slurm.conf.tmpl", "slurm.conf", 0o644},
		{"gres.conf.tmpl", "gres.conf", 0o644},
		{"reboot.sh.tmpl", "reboot.sh", 0o755},
	} {
		tm, err := template.ParseFS(templates, "testdata/"+f.tmpl)
		if err != nil {
			return fmt.Errorf("localslurm: template %s: %w", f.tmpl, err)
		}
		var b bytes.Buffer
		if err := tm.Execute(&b, d); err != nil {
			return fmt.Errorf("localslurm: template %s: %w", f.tmpl, err)
		}
		if err := os.WriteFile(filepath.Join(c.dir, f.out), b.Bytes(), f.mode); err != nil {
			return fmt.Errorf("localslurm: %w", err)
		}
	}
	if c.opts.TopologyConf != "" {
		if err := os.WriteFile(filepath.Join(c.dir, "topology.conf"), []byte(c.opts.TopologyConf), 0o644); err != nil {
			return fmt.Errorf("localslurm: %w", err)
		}
	}
	return nil
}

func (c *Cluster) mungeSocket() string { return filepath.Join(c.dir, "munge", "munge.sock") }

// startMunge runs a munged of the cluster's own (foreground, as root, --force
// because the temp directory's parents are not world-executable) with a fresh key.
func (c *Cluster) startMunge() error {
	m := filepath.Join(c.dir, "munge")
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("localslurm: munge key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m, "munge.key"), key, 0o600); err != nil {
		return fmt.Errorf("localslurm: munge key: %w", err)
	}
	cmd := exec.Command(c.bins["munged"], "--foreground", "--force",
		"--socket="+c.mungeSocket(),
		"--key-file="+filepath.Join(m, "munge.key"),
		"--pid-file="+filepath.Join(m, "munged.pid"),
		"--seed-file="+filepath.Join(m, "munged.seed"),
		"--log-file="+filepath.Join(c.dir, "log", "munged.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.OpenFile(filepath.Join(c.dir, "log", "munged.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("localslurm: %w", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("localslurm: start munged: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.munged, c.mdone = cmd, done
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return fmt.Errorf("localslurm: munged exited at start (%s):\n%s", cmd.ProcessState, readTail(filepath.Join(c.dir, "log", "munged.out")))
		default:
		}
		if conn, err := net.Dial("unix", c.mungeSocket()); err == nil {
			_ = conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localslurm: munged socket %s not answering after 10s:\n%s", c.mungeSocket(), readTail(filepath.Join(c.dir, "log", "munged.out")))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemon runs a Slurm daemon that forks into the background and returns once the
// parent has exited, recording the PID from the PID file.
func (c *Cluster) daemon(name, pidFile string, env []string, args ...string) error {
	bin := c.bins[strings.SplitN(name, "-", 2)[0]]
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), c.Env()...), env...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("localslurm: %s %s: %w: %s\n%s", bin, strings.Join(args, " "), err, out.String(), c.Logs())
	}
	for range 100 {
		if pid, err := readPID(pidFile); err == nil {
			c.mu.Lock()
			c.pids[name] = pid
			c.mu.Unlock()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("localslurm: %s started but wrote no PID file %s:\n%s", name, pidFile, c.Logs())
}

func (c *Cluster) startController(deadline time.Time) error {
	if err := c.daemon("slurmctld", c.pidFile("slurmctld"), nil); err != nil {
		return err
	}
	for {
		out, err := c.Output("scontrol", "ping")
		if err == nil && strings.Contains(out, "is UP") {
			return nil
		}
		if pid, ok := c.pidOf("slurmctld"); !ok || !c.alive(pid) {
			return fmt.Errorf("localslurm: slurmctld exited at start:\n%s", c.Logs())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localslurm: slurmctld not answering: %q (%v)\n%s", out, err, c.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) startSlurmd(name string, rebooted bool) error {
	args := []string{"-N", name}
	if rebooted {
		args = append([]string{"-b"}, args...)
	}
	return c.daemon("slurmd-"+name, c.pidFile("slurmd-"+name), []string{"GPUWATCH_REALSLURM_NODE=" + name}, args...)
}

func (c *Cluster) pidFile(daemon string) string {
	return filepath.Join(c.dir, "run", daemon+".pid")
}

// Env is the environment that points Slurm's commands at this cluster
// (SLURM_CONF=…), to append to os.Environ().
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.conf} }

// Conf is the path of the cluster's slurm.conf.
func (c *Cluster) Conf() string { return c.conf }

// Dir is the cluster's directory: slurm.conf, gres.conf, topology.conf (with
// Options.TopologyConf), reboot.sh, state/,
// spool/, log/, run/ (PID files), jobs/ (job output), munge/.
func (c *Cluster) Dir() string { return c.dir }

// Nodes are the node names, gpu01… in order.
func (c *Cluster) Nodes() []string {
	var names []string
	for _, n := range c.nodes {
		names = append(names, n.Name)
	}
	return names
}

// Options are the options the cluster runs with, defaults filled in.
func (c *Cluster) Options() Options { return c.opts }

// Command prepares one of Slurm's commands (from PATH) against this cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = c.dir
	return cmd
}

// Output runs a Slurm command against this cluster (30 s at most) and returns its
// standard output; the error carries its standard error.
func (c *Cluster) Output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := c.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// SubmitJob submits script (a shell command line, through sbatch --wrap) with
// the sbatch options args (e.g. "--gres=gpu:2", "-w", "gpu02") and returns the
// job ID. The job's output goes to JobOutput.
func (c *Cluster) SubmitJob(script string, args ...string) (string, error) {
	a := append([]string{"--parsable", "--chdir=" + filepath.Join(c.dir, "jobs"), "--output=" + filepath.Join(c.dir, "jobs", "%j.out")}, args...)
	a = append(a, "--wrap="+script)
	out, err := c.Output("sbatch", a...)
	if err != nil {
		return "", err
	}
	out = strings.TrimSpace(out)
	id, _, _ := strings.Cut(out, ";")
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return "", fmt.Errorf("localslurm: sbatch printed %q, not a job ID", out)
	}
	return id, nil
}

// JobOutput is what job id has written so far ("" before it starts).
func (c *Cluster) JobOutput(id string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "jobs", id+".out"))
	return string(b)
}

// NodeStateOf is sinfo's long state of the node with its suffix, as an
// operator reads it: "idle", "mixed", "allocated", "draining", "drained",
// "down*", "reboot^", "idle@" (reboot requested)…
func (c *Cluster) NodeStateOf(name string) (string, error) {
	out, err := c.Output("sinfo", "-h", "-N", "-n", name, "-o", "%T")
	return strings.TrimSpace(out), err
}

// JobStateOf is squeue's state of the job (PENDING, RUNNING, COMPLETING…), ""
// once squeue no longer lists it.
func (c *Cluster) JobStateOf(id string) (string, error) {
	out, err := c.Output("squeue", "-h", "-j", id, "-o", "%T")
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		return "", nil
	}
	return strings.TrimSpace(out), err
}

// ResetCluster puts a shared cluster back as it started: every job cancelled,
// every pending reboot cancelled, every node resumed, and all nodes idle
// (within 30 s).
func (c *Cluster) ResetCluster() error {
	if err := c.StartControllerAgain(); err != nil {
		return err
	}
	out, err := c.Output("squeue", "-h", "-o", "%i")
	if err != nil {
		return err
	}
	if ids := strings.Fields(out); len(ids) > 0 {
		if _, err := c.Output("scancel", ids...); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes() {
		st, err := c.NodeStateOf(n)
		if err != nil {
			return err
		}
		if strings.HasSuffix(st, "@") {
			_, _ = c.Output("scontrol", "cancel_reboot", n)
		}
		if st != "idle" {
			// Fails harmlessly ("not drained"…) for a node only busy.
			_, _ = c.Output("scontrol", "update", "nodename="+n, "state=resume")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.Output("sinfo", "-h", "-N", "-o", "%N %T")
		if err == nil && countState(out, "idle") == len(c.nodes) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localslurm: not all nodes idle 30 s after a reset\n%s", c.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StopControllerNow stops slurmctld (SIGTERM; it saves its state) and waits for
// it to exit. The slurmd and running jobs keep running; commands fail as on a
// site whose controller is down.
func (c *Cluster) StopControllerNow() error {
	return c.stopDaemons(10*time.Second, "slurmctld")
}

// StartControllerAgain starts slurmctld again on the saved state (no-op when
// it runs) and waits until it answers.
func (c *Cluster) StartControllerAgain() error {
	c.mu.Lock()
	pid, ok := c.pids["slurmctld"]
	c.mu.Unlock()
	if ok && c.alive(pid) {
		return nil
	}
	return c.startController(time.Now().Add(c.opts.StartTimeout))
}

// ControllerRunning reports whether slurmctld's process is alive.
func (c *Cluster) ControllerRunning() bool {
	c.mu.Lock()
	pid, ok := c.pids["slurmctld"]
	c.mu.Unlock()
	return ok && c.alive(pid)
}

// Logs returns the end of slurmctld's log, for failure messages.
func (c *Cluster) Logs() string {
	return "--- slurmctld.log (end) ---\n" + readTail(filepath.Join(c.dir, "log", "slurmctld.log"))
}

// Log returns one of the cluster's logs whole: "slurmctld", "slurmd-gpu02",
// "munged", "reboots".
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "log", name+".log"))
	return string(b)
}

// Close stops every daemon and every process left that belongs to the cluster,
// then removes its directory. It is safe to call twice.
func (c *Cluster) Close() error {
	var errs []error
	// Daemons by PID file (or the PID seen at start): slurmd first, so none waits
	// on a controller that is gone, then slurmctld.
	var slurmds []string
	for _, n := range c.nodes {
		slurmds = append(slurmds, "slurmd-"+n.Name)
	}
	if err := c.stopDaemons(3*time.Second, slurmds...); err != nil {
		errs = append(errs, err)
	}
	if err := c.stopDaemons(5*time.Second, "slurmctld"); err != nil {
		errs = append(errs, err)
	}
	// Whatever is left: slurmstepd, job scripts, a slurmd a fake reboot started.
	if err := c.killLeftovers(); err != nil {
		errs = append(errs, err)
	}
	if c.munged != nil {
		_ = c.munged.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.mdone:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-c.munged.Process.Pid, syscall.SIGKILL)
			<-c.mdone
		}
		c.munged = nil
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localslurm: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func readTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	const n = 3000
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
