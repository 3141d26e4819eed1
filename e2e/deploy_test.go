package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/muster-gg/muster"
	"github.com/muster-gg/muster/config"
	"github.com/muster-gg/muster/fleet"
	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// The container port of the duel server: config.yml's muster.server.http.port.
const gamePort = 8080

// The Kubernetes pods' muster.server.http.operator-port: the probes and
// the scrape go there, and the Service does not publish it.
const operatorPort = 9090

// loadMetric is the series the HPA scales on; TestFleet/metrics checks
// that the servers export it.
const loadMetric = "muster_server_load"

// checkEnv checks a recipe's environment: every MUSTER__ variable must be
// one config.ApplyEnv accepts, and together, on the defaults, they must
// make a configuration muster.CheckConfig accepts. Values that the
// platform fills in ($(POD_IP), ${VAR:-default}) are replaced by examples
// first. It returns the resulting configuration.
// stopGrace is the least time an orchestrator must give a server of cfg
// between SIGTERM and SIGKILL: what a drain may take, and a margin for a
// loaded machine (a compose fleet's server took 77 s of a 70 s bound while
// the CI machine ran other suites beside it).
func stopGrace(cfg config.Config) time.Duration {
	return muster.StopBound(cfg) + stopMargin
}

const stopMargin = 15 * time.Second

func stopGraceWhy(cfg config.Config) string {
	return fmt.Sprintf("a drain may take %v (muster.StopBound: the drain timeout %v, twice the drain grace %v, leaving and closing) and a loaded machine %v more",
		muster.StopBound(cfg), time.Duration(cfg.Server.Drain.Timeout), time.Duration(cfg.Room.DrainGrace), stopMargin)
}

func checkEnv(t *testing.T, where string, env map[string]string) config.Config {
	t.Helper()
	subst := strings.NewReplacer("$(POD_IP)", "10.1.2.3", "$(POD_NAME)", "duel-7d9f-x2x4q")
	fallback := regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}`)
	cfg := muster.DefaultConfig()
	var vars []string
	for name, value := range env {
		if !strings.HasPrefix(name, "MUSTER__") {
			continue
		}
		value = fallback.ReplaceAllString(subst.Replace(value), "$1")
		vars = append(vars, name)
		if err := config.ApplyEnv(&cfg, []string{name + "=" + value}); err != nil {
			t.Errorf("%s: %s: %v", where, name, err)
		}
	}
	if len(vars) == 0 {
		t.Errorf("%s sets no MUSTER__ variable", where)
	}
	if err := muster.CheckConfig(cfg); err != nil {
		t.Errorf("%s: the configuration is not valid: %v", where, err)
	}
	if cfg.Server.Fleet.Redis == "" {
		t.Errorf("%s: no MUSTER__SERVER__FLEET__REDIS: each server would be a fleet of one", where)
	}
	if len(cfg.Secret()) < 16 {
		t.Errorf("%s: MUSTER__SECURITY__KEY must be set, at least 16 bytes, the same on every server", where)
	}
	if cfg.Server.HTTP.Port != gamePort {
		t.Errorf("%s: the server listens on %d, want %d", where, cfg.Server.HTTP.Port, gamePort)
	}
	return cfg
}

// The e2e servers' own environment uses the real names too.
func TestDeployEnvNames(t *testing.T) {
	env := map[string]string{}
	for _, kv := range fleetConfig("").ServerEnv("127.0.0.2", gamePort, "duel-1", "127.0.0.2:8080", "127.0.0.1:6379", "e2e", "0123456789abcdef0123") {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	checkEnv(t, "e2e server", env)
}

// compose is the part of docker-compose.yml the test reads; it is decoded
// with known fields only, so that a misspelt key fails the test.
type compose struct {
	Services map[string]struct {
		Image           string            `yaml:"image"`
		Build           any               `yaml:"build"`
		Command         any               `yaml:"command"`
		Restart         string            `yaml:"restart"`
		DependsOn       any               `yaml:"depends_on"`
		Environment     map[string]string `yaml:"environment"`
		Ports           []string          `yaml:"ports"`
		Expose          []string          `yaml:"expose"`
		Volumes         []string          `yaml:"volumes"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
		ContainerName   string            `yaml:"container_name"`
		Deploy          struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
}

// docker-compose.yml: redis, the game built from the Dockerfile with
// replicas and no host port (so --scale works), nginx in front with
// deploy/nginx.conf; real variable names; a stop grace period above the
// drain timeout.
func TestDeployCompose(t *testing.T) {
	root := root(t)
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, name := range []string{"redis", "game", "nginx"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("docker-compose.yml has no service %s", name)
		}
	}
	game, nginx := c.Services["game"], c.Services["nginx"]
	if game.Build == nil {
		t.Error("game is not built from the Dockerfile")
	}
	if game.Deploy.Replicas < 2 {
		t.Errorf("game has %d replicas, want a fleet", game.Deploy.Replicas)
	}
	if len(game.Ports) > 0 || game.ContainerName != "" {
		t.Errorf("game publishes ports %v or names its container %q: replicas could not scale", game.Ports, game.ContainerName)
	}
	if !slices.Contains(game.Expose, strconv.Itoa(gamePort)) {
		t.Errorf("game exposes %v, want %d", game.Expose, gamePort)
	}
	cfg := checkEnv(t, "docker-compose.yml game", game.Environment)
	if host, _, _ := strings.Cut(cfg.Server.Fleet.Redis, ":"); c.Services[host].Image == "" {
		t.Errorf("MUSTER__SERVER__FLEET__REDIS=%s names no service", cfg.Server.Fleet.Redis)
	}
	grace, err := time.ParseDuration(game.StopGracePeriod)
	if want := stopGrace(cfg); err != nil || grace < want {
		t.Errorf("game's stop_grace_period %q, want at least %v: %s", game.StopGracePeriod, want, stopGraceWhy(cfg))
	}
	if !slices.Contains(nginx.Volumes, "./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro") {
		t.Errorf("nginx mounts %v, want deploy/nginx.conf as its default server", nginx.Volumes)
	}
	if len(nginx.Ports) == 0 || !strings.HasSuffix(nginx.Ports[0], ":80") {
		t.Errorf("nginx publishes %v, want its port 80", nginx.Ports)
	}
	conf := readNginx(t, filepath.Join(root, "deploy", "nginx.conf"))
	if !strings.Contains(conf, "set $game game:"+strconv.Itoa(gamePort)+";") || !strings.Contains(conf, "proxy_pass http://$game;") {
		t.Errorf("deploy/nginx.conf does not proxy to the game service on port %d", gamePort)
	}
}

// readNginx reads an nginx configuration and checks what every one of
// ours needs: WebSocket upgrades, long timeouts, no sticky sessions.
func readNginx(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(data)
	var directives []string
	for line := range strings.Lines(conf) {
		if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
			directives = append(directives, strings.Join(strings.Fields(line), " "))
		}
	}
	for _, want := range []string{
		"proxy_http_version 1.1;",
		"proxy_set_header Upgrade $http_upgrade;",
		"proxy_set_header Connection $connection_upgrade;",
		"proxy_read_timeout 1h;",
		"proxy_send_timeout 1h;",
		"proxy_buffering off;",
	} {
		if !slices.Contains(directives, want) {
			t.Errorf("%s: no %q", filepath.Base(path), want)
		}
	}
	for _, d := range directives {
		for _, sticky := range []string{"ip_hash", "hash ", "sticky", "least_conn"} {
			if strings.HasPrefix(d, sticky) {
				t.Errorf("%s: %q: want plain round robin, no affinity", filepath.Base(path), d)
			}
		}
	}
	return conf
}

// locationBlock returns the directives of the "location /" block of conf,
// without comments and proxy_pass (which differ between our files).
func locationBlock(conf string) []string {
	var out []string
	depth := -1
	for line := range strings.Lines(conf) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.Join(strings.Fields(line), " ")
		switch {
		case line == "location / {":
			depth = 0
		case depth < 0, line == "":
		case strings.HasSuffix(line, "{"):
			depth++
		case line == "}":
			if depth == 0 {
				return out
			}
			depth--
		case strings.HasPrefix(line, "proxy_pass "), strings.HasPrefix(line, "set $game "):
		default:
			out = append(out, line)
		}
	}
	return out
}

// deploy/nginx.conf (compose) and deploy/nginx-local.conf (a fleet on one
// machine, and this package's nginx) proxy alike, and nginx accepts both.
func TestDeployNginx(t *testing.T) {
	root := root(t)
	compose := readNginx(t, filepath.Join(root, "deploy", "nginx.conf"))
	local := readNginx(t, filepath.Join(root, "deploy", "nginx-local.conf"))
	if a, b := locationBlock(compose), locationBlock(local); !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("the location blocks differ:\nnginx.conf:       %q\nnginx-local.conf: %q", a, b)
	}
	bin := testbin.Need(t, "nginx")
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "main.conf")
	// deploy/nginx.conf is included in the http block, as in the nginx image.
	os.WriteFile(wrapper, []byte("events {}\nhttp {\n    include "+filepath.Join(root, "deploy", "nginx.conf")+";\n}\n"), 0o644)
	for _, file := range []string{wrapper, filepath.Join(root, "deploy", "nginx-local.conf")} {
		out, err := exec.Command(bin, "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", file).CombinedOutput()
		if err != nil {
			t.Errorf("nginx -t %s: %v\n%s", file, err, out)
		}
	}
}

// manifest is the part of a Kubernetes object the test reads.
type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Resources []string `yaml:"resources"` // Kustomization
	Spec      struct {
		// Deployment
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Name  string `yaml:"name"`
					Ports []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
					Env []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					ReadinessProbe probe `yaml:"readinessProbe"`
					LivenessProbe  probe `yaml:"livenessProbe"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		// Service (Selector above is a plain map there)
		SessionAffinity string `yaml:"sessionAffinity"`
		Ports           []struct {
			Port       int `yaml:"port"`
			TargetPort any `yaml:"targetPort"`
		} `yaml:"ports"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		Metrics []struct {
			Type string `yaml:"type"`
			Pods struct {
				Metric struct {
					Name string `yaml:"name"`
				} `yaml:"metric"`
			} `yaml:"pods"`
		} `yaml:"metrics"`
	} `yaml:"spec"`
	raw map[string]any
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

// readManifests reads every object of every YAML file in dir.
func readManifests(t *testing.T, dir string) (map[string][]manifest, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	byKind := map[string][]manifest{}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var node yaml.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var m manifest
			if err := node.Decode(&m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := node.Decode(&m.raw); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m.APIVersion == "" || m.Kind == "" {
				t.Errorf("%s: an object without apiVersion or kind", f)
			}
			byKind[m.Kind] = append(byKind[m.Kind], m)
		}
	}
	return byKind, names
}

// named returns the last object of kind named name, failing the test if
// there is none.
func named(t *testing.T, objs map[string][]manifest, kind, name string) *manifest {
	t.Helper()
	var found *manifest
	for i, m := range objs[kind] {
		if m.Metadata.Name == name {
			found = &objs[kind][i]
		}
	}
	if found == nil {
		t.Fatalf("no %s %s", kind, name)
	}
	return found
}

// deploy/k8s: a Deployment whose probes are the real paths on the
// operator's port, scraped there too, whose environment the configuration
// accepts, and whose grace period is above the drain timeout; a Service
// without affinity that publishes the game's port and not the operator's,
// and keeps the players' addresses (externalTrafficPolicy Local);
// an HPA on the load metric; a kustomization that lists them all.
func TestDeployKubernetes(t *testing.T) {
	dir := filepath.Join(root(t), "deploy", "k8s")
	objs, files := readManifests(t, dir)

	if k := objs["Kustomization"]; len(k) != 1 {
		t.Errorf("%d Kustomizations, want 1", len(k))
	} else {
		listed := append(slices.Clone(k[0].Resources), "kustomization.yaml")
		slices.Sort(listed)
		if !slices.Equal(listed, files) {
			t.Errorf("kustomization.yaml lists %v; the directory has %v", k[0].Resources, files)
		}
	}

	duel := named(t, objs, "Deployment", "duel")
	spec := duel.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("duel has %d containers, want 1", len(spec.Containers))
	}
	ctr := spec.Containers[0]
	if len(ctr.Ports) != 2 || ctr.Ports[0].ContainerPort != gamePort || ctr.Ports[1].ContainerPort != operatorPort || ctr.Ports[1].Name != "operator" {
		t.Errorf("container ports %+v, want %d and %d named operator", ctr.Ports, gamePort, operatorPort)
	}
	for _, p := range []struct {
		name string
		got  probe
		path string
	}{
		{"readinessProbe", ctr.ReadinessProbe, fleet.PathReady},
		{"livenessProbe", ctr.LivenessProbe, fleet.PathLive},
	} {
		if p.got.HTTPGet.Path != p.path || p.got.HTTPGet.Port != operatorPort && p.got.HTTPGet.Port != "operator" {
			t.Errorf("%s gets %q on port %v, want %s on the operator's port %d", p.name, p.got.HTTPGet.Path, p.got.HTTPGet.Port, p.path, operatorPort)
		}
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
		if e.Name == "MUSTER__SECURITY__KEY" && e.Value == "" {
			env[e.Name] = "from-a-secret-0123456789" // valueFrom
		}
	}
	cfg := checkEnv(t, "deployment.yaml", env)
	if cfg.Server.HTTP.OperatorPort != operatorPort {
		t.Errorf("deployment.yaml: MUSTER__SERVER__HTTP__OPERATOR_PORT makes operator-port %d, want %d: the game's port is public", cfg.Server.HTTP.OperatorPort, operatorPort)
	}
	ann := duel.Spec.Template.Metadata.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(operatorPort) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("the pods' scrape annotations %v, want /metrics on the operator's port %d", ann, operatorPort)
	}
	if grace, want := time.Duration(spec.TerminationGracePeriodSeconds)*time.Second, stopGrace(cfg); grace < want {
		t.Errorf("terminationGracePeriodSeconds %v, want at least %v: %s", grace, want, stopGraceWhy(cfg))
	}
	labels := duel.Spec.Template.Metadata.Labels
	for k, v := range duel.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods' labels %v", k, v, labels)
		}
	}

	svc := named(t, objs, "Service", "duel")
	if a := svc.Spec.SessionAffinity; a != "" && a != "None" {
		t.Errorf("the Service has session affinity %s, want none", a)
	}
	// A LoadBalancer with the default policy (Cluster) rewrites the
	// source: the servers would see a node's address for every player,
	// and the per-address limits would count a node's players as one.
	spec2, _ := svc.raw["spec"].(map[string]any)
	if spec2["type"] == "LoadBalancer" && spec2["externalTrafficPolicy"] != "Local" {
		t.Errorf("the LoadBalancer Service has externalTrafficPolicy %v, want Local: the servers would not see the players' addresses", spec2["externalTrafficPolicy"])
	}
	if env["MUSTER__SERVER__HTTP__TRUSTED_PROXIES"] != "" && spec2["type"] == "LoadBalancer" {
		t.Errorf("deployment.yaml trusts the X-Forwarded-For of %s, but no proxy stands between the LoadBalancer and the pods", env["MUSTER__SERVER__HTTP__TRUSTED_PROXIES"])
	}
	sel, _ := svc.raw["spec"].(map[string]any)["selector"].(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("the Service selects %s=%v, which the duel pods (%v) do not have", k, v, labels)
		}
	}
	if len(sel) == 0 || len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].TargetPort != gamePort {
		t.Errorf("the Service selects %v and targets %+v, want the duel pods on %d", sel, svc.Spec.Ports, gamePort)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort == operatorPort || p.TargetPort == "operator" || p.Port == operatorPort && p.TargetPort == nil {
			t.Errorf("the Service publishes the operator's port (%+v): the probes, drain, /metrics and dashboard would be public", p)
		}
	}

	hpas := objs["HorizontalPodAutoscaler"]
	if len(hpas) != 1 {
		t.Fatalf("%d HPAs, want 1", len(hpas))
	}
	h := hpas[0]
	if h.APIVersion != "autoscaling/v2" || h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != "duel" {
		t.Errorf("the HPA (%s) scales %+v, want autoscaling/v2 on Deployment duel", h.APIVersion, h.Spec.ScaleTargetRef)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Type != "Pods" || h.Spec.Metrics[0].Pods.Metric.Name != loadMetric {
		t.Errorf("the HPA's metrics %+v, want the Pods metric %s", h.Spec.Metrics, loadMetric)
	}
}

// The Dockerfile builds the example statically in a build stage and runs
// it as a non-root user with config.yml; .dockerignore keeps what the
// build needs.
func TestDeployDockerfile(t *testing.T) {
	root := root(t)
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]string       // instructions per stage
	args := map[string]string{} // ARG name=default before the first FROM
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			// A base image from a build argument is its default: the
			// official image a user's build pulls.
			for name, def := range args {
				line = strings.ReplaceAll(line, "${"+name+"}", def)
			}
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			name, def, ok := strings.Cut(strings.TrimPrefix(line, "ARG "), "=")
			if !strings.HasPrefix(line, "ARG ") || !ok {
				t.Fatalf("Dockerfile: %q before FROM, want only ARG name=default", line)
			}
			args[name] = def
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], line)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a run stage", len(stages))
	}
	has := func(stage []string, re string) bool {
		return slices.ContainsFunc(stage, regexp.MustCompile(re).MatchString)
	}
	build, run := stages[0], stages[len(stages)-1]
	if !has(build, `^FROM golang:\S+ AS build$`) || !has(build, `^RUN CGO_ENABLED=0 .*go build .*\./examples/duel$`) {
		t.Errorf("the build stage %q does not build ./examples/duel statically", build)
	}
	if !has(run, `^COPY --from=build `) || !has(run, `^COPY config\.yml `) || !has(run, `^ENTRYPOINT \[`) {
		t.Errorf("the run stage %q lacks the binary, config.yml or an entrypoint", run)
	}
	if !has(run, `^EXPOSE `+strconv.Itoa(gamePort)+`$`) {
		t.Errorf("the run stage does not expose %d", gamePort)
	}
	users := slices.DeleteFunc(slices.Clone(run), func(s string) bool { return !strings.HasPrefix(s, "USER ") })
	if len(users) == 0 || slices.ContainsFunc(users, func(u string) bool {
		name, _, _ := strings.Cut(strings.TrimPrefix(u, "USER "), ":")
		return name == "root" || name == "0"
	}) {
		t.Errorf("the run stage runs as %v, want a non-root user", users)
	}

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(ignore)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	needed := []string{"go.mod", "go.sum", "config.yml", "examples/duel/main.go", "examples/duel/static/app.js", "room/host.go", "fleet/fleet.go"}
	for _, p := range needed {
		if pat := ignored(patterns, p); pat != "" {
			t.Errorf(".dockerignore pattern %q leaves %s out of the build", pat, p)
		}
	}
}

// ignored returns the .dockerignore pattern that excludes path, or "".
// It knows the forms our file uses: names, globs and **/ prefixes, which
// also exclude everything under a matching directory.
func ignored(patterns []string, path string) string {
	parts := strings.Split(path, "/")
	for _, pat := range patterns {
		anyDepth := strings.HasPrefix(pat, "**/")
		pat := strings.TrimPrefix(pat, "**/")
		for i := range parts {
			for j := i + 1; j <= len(parts); j++ {
				if !anyDepth && i > 0 {
					continue
				}
				if ok, _ := filepath.Match(pat, strings.Join(parts[i:j], "/")); ok {
					return pat
				}
			}
		}
	}
	return ""
}
