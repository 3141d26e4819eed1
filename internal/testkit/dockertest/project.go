package dockertest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Project is a compose project of the test's own: docker compose runs in
// Dir with the project name Name, so its containers, network and volumes
// are apart from any other project's, and are removed when the test ends.
type Project struct {
	// Name is the project's name (COMPOSE_PROJECT_NAME).
	Name string
	// Dir is where docker compose runs: the directory of the compose file.
	Dir string

	t      testing.TB
	env    []string
	images []string // to remove at the end
}

// NewProject returns a project named prefix plus a random suffix, run in
// dir. When the test ends, docker compose down -v removes its containers,
// network and volumes, and the images given to RemoveImage are removed;
// the project's logs are shown first if the test failed.
func NewProject(t testing.TB, prefix, dir string) *Project {
	t.Helper()
	p := &Project{
		Name: prefix + strings.ToLower(rand.Text()[:8]),
		Dir:  dir,
		t:    t,
	}
	p.env = []string{"COMPOSE_PROJECT_NAME=" + p.Name}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := p.Run(ctx, nil, "docker", "compose", "logs", "--no-color", "--tail", "60")
			t.Logf("logs of project %s:\n%s", p.Name, out)
		}
		if out, err := p.Run(ctx, nil, "docker", "compose", "down", "-v", "--remove-orphans", "-t", "5"); err != nil {
			t.Errorf("docker compose down: %v\n%s", err, out)
		}
		for _, im := range p.images {
			if out, err := docker(ctx, nil, "image", "rm", im); err != nil && !strings.Contains(out, "No such image") {
				t.Errorf("remove image %s: %v\n%s", im, err, out)
			}
		}
	})
	return p
}

// Setenv adds variables (NAME=value) to those of the project's commands.
// It is for the test's goroutine, before the commands run.
func (p *Project) Setenv(kv ...string) { p.env = append(p.env, kv...) }

// RemoveImage makes the end of the test remove image ref, one the
// project's commands build.
func (p *Project) RemoveImage(ref string) { p.images = append(p.images, ref) }

// Run runs the command line args (a docker command) in the project's
// directory with its variables plus more (NAME=value, winning over the
// project's), and returns the command's output and error. Variables of
// this process that would change the recipe (MUSTER_…, COMPOSE_…) are
// left out, so the test runs what a user would.
func (p *Project) Run(ctx context.Context, more []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = p.Dir
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MUSTER_") || strings.HasPrefix(kv, "COMPOSE_")
	})
	cmd.Env = append(append(env, p.env...), more...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return string(out), err
}

// Must runs the command line line (split at spaces) as Run does, and
// fails the test when it fails. It returns the output.
func (p *Project) Must(ctx context.Context, more []string, line string) string {
	p.t.Helper()
	out, err := p.Run(ctx, more, strings.Fields(line)...)
	if err != nil {
		p.t.Fatalf("%v\n%s", err, lastLines(out, 30))
	}
	return out
}

// Running returns the full ids of the project's running containers of
// service. It asks the engine's list, which no container's state holds up.
func (p *Project) Running(ctx context.Context, service string) ([]string, error) {
	out, err := docker(ctx, nil, "ps", "--no-trunc", "--quiet",
		"--filter", "label=com.docker.compose.project="+p.Name,
		"--filter", "label=com.docker.compose.service="+service,
		"--filter", "status=running")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return strings.Fields(out), nil
}

// Addresses returns the containers on the project's default network
// (<name>_default), by full id: their name and IPv4 address.
func (p *Project) Addresses(ctx context.Context) (map[string][2]string, error) {
	out, err := docker(ctx, nil, "network", "inspect", "--format",
		`{{range $id, $c := .Containers}}{{$id}} {{$c.Name}} {{$c.IPv4Address}}{{"\n"}}{{end}}`, p.Name+"_default")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	addrs := map[string][2]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 3 {
			ip, _, _ := strings.Cut(f[2], "/")
			addrs[f[0]] = [2]string{f[1], ip}
		}
	}
	return addrs, nil
}

// Leftovers returns what the engine still has of the project: its
// containers, networks and volumes, one "kind name" each.
func (p *Project) Leftovers(ctx context.Context) ([]string, error) {
	label := "label=com.docker.compose.project=" + p.Name
	var left []string
	for _, q := range [][]string{
		{"container", "ps", "-a", "--filter", label, "--format", "{{.Names}}"},
		{"network", "network", "ls", "--filter", label, "--format", "{{.Name}}"},
		{"volume", "volume", "ls", "--filter", label, "--format", "{{.Name}}"},
	} {
		out, err := docker(ctx, nil, q[1:]...)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, out)
		}
		for _, name := range strings.Fields(out) {
			left = append(left, q[0]+" "+name)
		}
	}
	return left, nil
}
