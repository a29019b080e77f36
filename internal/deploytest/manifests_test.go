package deploytest

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/config"
)

const manifestsDir = repoRoot + "/deploy/kubernetes"

// bundle is the manifests of one folder: one deployment, applied
// together with kubectl apply -f DIR. Cross-references stay inside it.
type bundle struct {
	dir          string
	configMaps   map[string]*corev1.ConfigMap
	pvcs         map[string]*corev1.PersistentVolumeClaim
	services     map[string]*corev1.Service
	workloads    []workload
	manifestsLen int
}

// workload is a Deployment or StatefulSet, reduced to what the checks need.
type workload struct {
	kind, name  string
	replicas    int32
	selector    *metav1.LabelSelector
	template    corev1.PodTemplateSpec
	claimTmpls  []string // StatefulSet volumeClaimTemplates
	serviceName string   // StatefulSet
	deployment  *appsv1.Deployment
}

func (w workload) String() string { return w.kind + " " + w.name }

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// loadBundles decodes every manifest under deploy/kubernetes strictly:
// an unknown or misspelt field anywhere fails.
func loadBundles(t *testing.T) []*bundle {
	t.Helper()
	byDir := map[string]*bundle{}
	var dirs []string
	err := filepath.WalkDir(manifestsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		dir := filepath.Dir(p)
		b := byDir[dir]
		if b == nil {
			b = &bundle{dir: dir, configMaps: map[string]*corev1.ConfigMap{},
				pvcs: map[string]*corev1.PersistentVolumeClaim{}, services: map[string]*corev1.Service{}}
			byDir[dir] = b
			dirs = append(dirs, dir)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, doc := range docSep.Split(string(data), -1) {
			where := fmt.Sprintf("%s document %d", p, i+1)
			if err := b.add(where, []byte(doc)); err != nil {
				t.Errorf("%v", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []*bundle
	for _, d := range dirs {
		out = append(out, byDir[d])
	}
	return out
}

func (b *bundle) add(where string, doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	if tm.Kind == "" && tm.APIVersion == "" {
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil || v != nil {
			return fmt.Errorf("%s: no apiVersion and kind", where)
		}
		return nil // comments only
	}
	strict := func(obj any) error {
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s (%s %s): %v", where, tm.APIVersion, tm.Kind, err)
		}
		return nil
	}
	var name string
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		var o corev1.ConfigMap
		if err := strict(&o); err != nil {
			return err
		}
		name = o.Name
		b.configMaps[o.Name] = &o
	case "v1 PersistentVolumeClaim":
		var o corev1.PersistentVolumeClaim
		if err := strict(&o); err != nil {
			return err
		}
		name = o.Name
		b.pvcs[o.Name] = &o
	case "v1 Service":
		var o corev1.Service
		if err := strict(&o); err != nil {
			return err
		}
		name = o.Name
		b.services[o.Name] = &o
	case "apps/v1 Deployment":
		var o appsv1.Deployment
		if err := strict(&o); err != nil {
			return err
		}
		name = o.Name
		b.workloads = append(b.workloads, workload{kind: tm.Kind, name: o.Name, replicas: replicas(o.Spec.Replicas),
			selector: o.Spec.Selector, template: o.Spec.Template, deployment: &o})
	case "apps/v1 StatefulSet":
		var o appsv1.StatefulSet
		if err := strict(&o); err != nil {
			return err
		}
		name = o.Name
		w := workload{kind: tm.Kind, name: o.Name, replicas: replicas(o.Spec.Replicas),
			selector: o.Spec.Selector, template: o.Spec.Template, serviceName: o.Spec.ServiceName}
		for _, c := range o.Spec.VolumeClaimTemplates {
			w.claimTmpls = append(w.claimTmpls, c.Name)
		}
		b.workloads = append(b.workloads, w)
	default:
		return fmt.Errorf("%s: %s %s: the test knows no such kind; add it to bundle.add", where, tm.APIVersion, tm.Kind)
	}
	if name == "" {
		return fmt.Errorf("%s: %s without metadata.name", where, tm.Kind)
	}
	b.manifestsLen++
	return nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// matches reports whether labels carry every key=value of selector.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// containerPort finds port (a name or a number) among c's ports.
func containerPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if port.Type == intstr.String && p.Name == port.StrVal ||
			port.Type == intstr.Int && p.ContainerPort == port.IntVal {
			return true
		}
	}
	return false
}

func TestManifests(t *testing.T) {
	bundles := loadBundles(t)
	var names []string
	for _, b := range bundles {
		names = append(names, filepath.Base(b.dir))
	}
	// The single-JobManager cluster and the highly available one.
	for _, want := range []string{"kubernetes", "ha"} {
		if !slices.Contains(names, want) {
			t.Errorf("deploy/kubernetes: no manifests for %q (have %q)", want, names)
		}
	}
	for _, b := range bundles {
		t.Run(filepath.Base(b.dir), func(t *testing.T) {
			if b.manifestsLen == 0 {
				t.Fatalf("%s: no manifests", b.dir)
			}
			b.checkWorkloads(t)
			b.checkServices(t)
			b.checkConfigMaps(t)
			b.checkWeir(t)
		})
	}
}

// checkWorkloads: selectors select their own pods; every container is
// non-root, bounded, probed on a port it has, mounts volumes that exist,
// and expands only variables it defines.
func (b *bundle) checkWorkloads(t *testing.T) {
	exposed := dockerfileExposed(t)
	for _, w := range b.workloads {
		if w.selector == nil || !matches(w.selector.MatchLabels, w.template.Labels) {
			t.Errorf("%v: selector %v does not match its pod template's labels %v", w, w.selector, w.template.Labels)
		}
		if w.serviceName != "" {
			if s := b.services[w.serviceName]; s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("%v: serviceName %s: want a headless Service of that name", w, w.serviceName)
			}
		}
		pod := w.template.Spec
		volumes := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			volumes[v.Name] = v
			switch {
			case v.ConfigMap != nil && b.configMaps[v.ConfigMap.Name] == nil:
				t.Errorf("%v: volume %s: no ConfigMap %s", w, v.Name, v.ConfigMap.Name)
			case v.PersistentVolumeClaim != nil && b.pvcs[v.PersistentVolumeClaim.ClaimName] == nil:
				t.Errorf("%v: volume %s: no PersistentVolumeClaim %s", w, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
		podNonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			where := fmt.Sprintf("%v container %s", w, c.Name)
			sc := c.SecurityContext
			nonRoot := podNonRoot
			if sc != nil && sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			if !nonRoot {
				t.Errorf("%s: want runAsNonRoot: true (pod or container securityContext)", where)
			}
			for _, u := range []*int64{podUser(pod), containerUser(sc)} {
				if u != nil && *u == 0 {
					t.Errorf("%s: runAsUser 0 is root", where)
				}
			}
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: want allowPrivilegeEscalation: false", where)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: want cpu and memory requests and a memory limit", where)
			}
			for _, p := range c.Ports {
				if len(p.Name) == 0 || len(p.Name) > 15 {
					t.Errorf("%s: port %d: want a name of 1 to 15 characters (probes and Services refer to it)", where, p.ContainerPort)
				}
			}
			probes := map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe}
			if c.LivenessProbe == nil {
				t.Errorf("%s: no livenessProbe", where)
			}
			for kind, p := range probes {
				if p == nil {
					continue
				}
				var port intstr.IntOrString
				switch {
				case p.HTTPGet != nil:
					port = p.HTTPGet.Port
					if !strings.HasPrefix(p.HTTPGet.Path, "/") {
						t.Errorf("%s: %s probe path %q", where, kind, p.HTTPGet.Path)
					}
				case p.TCPSocket != nil:
					port = p.TCPSocket.Port
				default:
					t.Errorf("%s: %s probe: want httpGet or tcpSocket", where, kind)
					continue
				}
				if !containerPort(c, port) {
					t.Errorf("%s: %s probe on port %s, which the container does not declare", where, kind, port.String())
				}
			}
			for _, m := range c.VolumeMounts {
				if _, ok := volumes[m.Name]; !ok && !slices.Contains(w.claimTmpls, m.Name) {
					t.Errorf("%s: mounts %s, which is neither a volume nor a volumeClaimTemplate", where, m.Name)
				}
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
			}
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				for _, m := range varRef.FindAllStringSubmatch(a, -1) {
					if !env[m[1]] {
						t.Errorf("%s: %q refers to $(%s), which the container's env does not define (Kubernetes would pass it literally)", where, a, m[1])
					}
				}
			}
			if isWeir(c) {
				for _, p := range c.Ports {
					if !slices.Contains(exposed, strconv.Itoa(int(p.ContainerPort))) {
						t.Errorf("%s: port %d is not EXPOSEd in the Dockerfile", where, p.ContainerPort)
					}
				}
			}
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func podUser(p corev1.PodSpec) *int64 {
	if p.SecurityContext == nil {
		return nil
	}
	return p.SecurityContext.RunAsUser
}

func containerUser(sc *corev1.SecurityContext) *int64 {
	if sc == nil {
		return nil
	}
	return sc.RunAsUser
}

// checkServices: each Service selects pods of this bundle, and each of its
// target ports is a port every selected pod's containers declare.
func (b *bundle) checkServices(t *testing.T) {
	for _, s := range b.services {
		var selected []workload
		for _, w := range b.workloads {
			if matches(s.Spec.Selector, w.template.Labels) {
				selected = append(selected, w)
			}
		}
		if len(selected) == 0 {
			t.Errorf("Service %s: selector %v matches no pod template", s.Name, s.Spec.Selector)
			continue
		}
		for _, sp := range s.Spec.Ports {
			target := sp.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(sp.Port)
			}
			for _, w := range selected {
				found := false
				for _, c := range w.template.Spec.Containers {
					found = found || containerPort(c, target)
				}
				if !found {
					t.Errorf("Service %s port %s: targetPort %s is no container port of %v", s.Name, sp.Name, target.String(), w)
				}
			}
		}
	}
}

// checkConfigMaps: every *.yaml in a ConfigMap is a weir configuration
// file that loads with known keys and valid values only.
func (b *bundle) checkConfigMaps(t *testing.T) {
	for _, cm := range b.configMaps {
		for key, content := range cm.Data {
			if !strings.HasSuffix(key, ".yaml") {
				continue
			}
			if err := loadWeirYAML(t, content); err != nil {
				t.Errorf("ConfigMap %s key %s: %v", cm.Name, key, err)
			}
		}
	}
}

func loadWeirYAML(t *testing.T, content string) error {
	p := filepath.Join(t.TempDir(), "weir.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return config.New().LoadYAML(p)
}

// TestConfigCheckRefusesUnknownKeys makes sure checkConfigMaps would catch
// a misspelt key: the loader refuses keys it does not know.
func TestConfigCheckRefusesUnknownKeys(t *testing.T) {
	if err := loadWeirYAML(t, "execution.checkpointing.intervall: 10 s\n"); err == nil {
		t.Fatal("a misspelt key loaded without error")
	}
	if err := loadWeirYAML(t, "execution.checkpointing.interval: 10 s\n"); err != nil {
		t.Fatal(err)
	}
}

func isWeir(c corev1.Container) bool {
	img := path.Base(c.Image)
	return strings.HasPrefix(img, "weir:") || img == "weir"
}

// weirProc is a weir container's command line, parsed by weir's own flags.
type weirProc struct {
	w       workload
	c       corev1.Container
	role    string
	flags   map[string]string // --name → value, as given
	defines map[string]string // -D key → value
}

// samplePodEnv stands in for the downward API when a flag's value is
// checked (Kubernetes expands $(VAR) before weir sees it).
var samplePodEnv = map[string]string{"POD_IP": "10.1.2.3", "POD_NAME": "weir-pod-0", "POD_NAMESPACE": "default"}

func expand(s string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := samplePodEnv[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// parseWeir parses c's args with the weir command of that role: unknown
// flags and bad -D keys or values fail.
func parseWeir(t *testing.T, w workload, c corev1.Container) *weirProc {
	t.Helper()
	where := fmt.Sprintf("%v container %s", w, c.Name)
	if len(c.Command) > 0 {
		t.Errorf("%s: sets command %q: the image's ENTRYPOINT is /weir, give args", where, c.Command)
	}
	if len(c.Args) == 0 {
		t.Errorf("%s: no args: want the role first (jobmanager, taskmanager)", where)
		return nil
	}
	root := (&app.Program{Name: "weir"}).Command()
	for _, sub := range root.Commands() {
		if sub.Name() != c.Args[0] {
			continue
		}
		if c.Args[0] != "jobmanager" && c.Args[0] != "taskmanager" {
			break
		}
		var args []string
		for _, a := range c.Args[1:] {
			args = append(args, expand(a))
		}
		if err := sub.ParseFlags(args); err != nil {
			t.Errorf("%s: weir %s %q: %v", where, c.Args[0], args, err)
			return nil
		}
		if rest := sub.Flags().Args(); len(rest) > 0 {
			t.Errorf("%s: weir %s takes no arguments, got %q", where, c.Args[0], rest)
		}
		p := &weirProc{w: w, c: c, role: c.Args[0], flags: map[string]string{}, defines: map[string]string{}}
		// The raw values (with $(VAR)) for the address checks.
		raw := c.Args[1:]
		for i := 0; i < len(raw); i++ {
			a := raw[i]
			switch {
			case a == "-D" && i+1 < len(raw):
				i++
				k, v, _ := strings.Cut(raw[i], "=")
				p.defines[k] = v
			case strings.HasPrefix(a, "--define="):
				k, v, _ := strings.Cut(strings.TrimPrefix(a, "--define="), "=")
				p.defines[k] = v
			case strings.HasPrefix(a, "-D"):
				k, v, _ := strings.Cut(strings.TrimPrefix(a, "-D"), "=")
				p.defines[k] = v
			case strings.HasPrefix(a, "--"):
				k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !ok && i+1 < len(raw) && !strings.HasPrefix(raw[i+1], "-") && sub.Flags().Lookup(k) != nil && sub.Flags().Lookup(k).NoOptDefVal == "" {
					i++
					v = raw[i]
				}
				p.flags[k] = v
			}
		}
		cfg := config.New()
		for k, v := range p.defines {
			if err := cfg.Set(k, expand(v)); err != nil {
				t.Errorf("%s: -D %s=%s: %v", where, k, v, err)
			}
		}
		return p
	}
	t.Errorf("%s: args[0] %q: want jobmanager or taskmanager", where, c.Args[0])
	return nil
}

// checkWeir checks the weir processes: flags weir knows, addresses other
// pods reach, --config files that the ConfigMap provides, --jobmanager
// and etcd endpoints naming Services here, and HA keys every process
// shares.
func (b *bundle) checkWeir(t *testing.T) {
	var jms, tms []*weirProc
	for _, w := range b.workloads {
		for _, c := range w.template.Spec.Containers {
			if !isWeir(c) {
				continue
			}
			p := parseWeir(t, w, c)
			if p == nil {
				continue
			}
			switch p.role {
			case "jobmanager":
				jms = append(jms, p)
			case "taskmanager":
				tms = append(tms, p)
			}
			b.checkConfigFile(t, p)
		}
	}
	if len(jms) != 1 || len(tms) == 0 {
		t.Fatalf("%s: want one JobManager workload and TaskManagers, got %d and %d", b.dir, len(jms), len(tms))
	}
	jm := jms[0]
	ha := jm.defines[config.HAType] == config.HATypeEtcd
	where := fmt.Sprintf("%v", jm.w)
	if jm.flags["id"] != "$(POD_NAME)" {
		t.Errorf("%s: --id %q: want $(POD_NAME), each JobManager's own name", where, jm.flags["id"])
	}
	if jm.w.template.Spec.Containers[0].Env == nil || !fieldRefEnv(jm.c, "POD_NAME", "metadata.name") {
		t.Errorf("%s: want env POD_NAME from metadata.name", where)
	}
	if _, ok := jm.flags["rest-allow-remote"]; !ok {
		t.Errorf("%s: no --rest-allow-remote: the REST API would refuse a non-loopback --rest-address and probes fail", where)
	}
	if ha {
		if jm.w.replicas < 2 {
			t.Errorf("%s: %d replicas under high availability: want a leader and a standby", where, jm.w.replicas)
		}
		for _, f := range []string{"rpc-address", "rest-address"} {
			host, _, err := net.SplitHostPort(jm.flags[f])
			if err != nil || host != "$(POD_IP)" {
				t.Errorf("%s: --%s %q: under HA it is published to etcd as bound: want $(POD_IP):PORT", where, f, jm.flags[f])
			}
		}
		for _, k := range []string{config.HAEtcdEndpoints, config.HAStorageDir} {
			if jm.defines[k] == "" {
				t.Errorf("%s: high availability without -D %s", where, k)
			}
		}
		for _, e := range strings.Split(jm.defines[config.HAEtcdEndpoints], ",") {
			e = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(e), "http://"), "https://")
			b.checkServiceAddress(t, where+": etcd endpoint", e)
		}
	} else {
		d := jm.w.deployment
		if jm.w.replicas != 1 || d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s: without high availability want a Deployment of 1 replica with strategy Recreate (two JobManagers must never share --state-dir)", where)
		}
		for _, k := range []string{"rpc-address", "rest-address"} {
			if _, _, err := net.SplitHostPort(jm.flags[k]); err != nil {
				t.Errorf("%s: --%s %q: %v", where, k, jm.flags[k], err)
			}
		}
	}
	for _, tm := range tms {
		where := fmt.Sprintf("%v", tm.w)
		if tm.flags["slots"] == "" {
			t.Errorf("%s: no --slots", where)
		}
		host, _, err := net.SplitHostPort(tm.flags["data-address"])
		if err != nil || host != "$(POD_IP)" {
			t.Errorf("%s: --data-address %q: other TaskManagers connect to it: want $(POD_IP):PORT", where, tm.flags["data-address"])
		}
		if !fieldRefEnv(tm.c, "POD_IP", "status.podIP") {
			t.Errorf("%s: want env POD_IP from status.podIP (downward API)", where)
		}
		for _, a := range strings.Split(tm.flags["jobmanager"], ",") {
			b.checkServiceAddress(t, where+": --jobmanager", a)
		}
		for _, k := range []string{config.HAType, config.HAEtcdEndpoints, config.HAClusterID, config.HAStorageDir} {
			if tm.defines[k] != jm.defines[k] {
				t.Errorf("%s: -D %s=%q, the JobManagers have %q: every process needs the same high-availability keys", where, k, tm.defines[k], jm.defines[k])
			}
		}
	}
}

func fieldRefEnv(c corev1.Container, name, field string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field {
			return true
		}
	}
	return false
}

// checkServiceAddress: addr is SERVICE:PORT of a Service in this bundle.
func (b *bundle) checkServiceAddress(t *testing.T, where, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s %q: %v", where, addr, err)
		return
	}
	s := b.services[strings.Split(host, ".")[0]]
	if s == nil {
		t.Errorf("%s %q: no Service %s in %s", where, addr, host, b.dir)
		return
	}
	for _, sp := range s.Spec.Ports {
		if strconv.Itoa(int(sp.Port)) == port {
			return
		}
	}
	t.Errorf("%s %q: Service %s has no port %s", where, addr, host, port)
}

// checkConfigFile: --config names a file a ConfigMap volume provides.
func (b *bundle) checkConfigFile(t *testing.T, p *weirProc) {
	file := p.flags["config"]
	if file == "" {
		t.Errorf("%v: no --config: mount the ConfigMap and read it", p.w)
		return
	}
	vols := map[string]corev1.Volume{}
	for _, v := range p.w.template.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range p.c.VolumeMounts {
		v := vols[m.Name]
		if v.ConfigMap == nil || path.Dir(file) != path.Clean(m.MountPath) {
			continue
		}
		if cm := b.configMaps[v.ConfigMap.Name]; cm != nil {
			if _, ok := cm.Data[path.Base(file)]; ok {
				return
			}
		}
	}
	t.Errorf("%v: --config %s: no ConfigMap volume mounted at %s with the key %s", p.w, file, path.Dir(file), path.Base(file))
}
