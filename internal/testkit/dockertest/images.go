package dockertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/internal/testkit/testbin"
)

// Images are the base images of the recipes, by the compose variable that
// names each: the local stand-ins BaseImages builds for the official ones.
type Images struct {
	Go, Redis, Nginx string
}

// Env returns the compose variables that make the recipe use the images.
func (im Images) Env() []string {
	return []string{
		"MUSTER_GO_IMAGE=" + im.Go,
		"MUSTER_REDIS_IMAGE=" + im.Redis,
		"MUSTER_NGINX_IMAGE=" + im.Nginx,
	}
}

// The Debian release and mirror the images are built from.
const (
	suite  = "bookworm"
	mirror = "http://deb.debian.org/debian"
)

// The recipes of the images. Each starts FROM the Debian image (named by
// %[1]s). The redis wrapper turns protected mode off, as the official
// image does (the game servers reach Redis from other containers), and
// /data is a volume there too. nginx
// reads conf.d/*.conf inside its http block, as the official image does,
// and logs to the container's output.
const (
	debianRecipe = `FROM %[1]s
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
`
	goRecipe = `FROM %[1]s
COPY . /usr/local/go
ENV GOPATH=/go GOTOOLCHAIN=local PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
`
	redisRecipe = `FROM %[1]s
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && printf '#!/bin/sh\nexec /usr/bin/redis-server "$@" --protected-mode no\n' >/usr/local/bin/redis-server \
 && chmod 755 /usr/local/bin/redis-server \
 && mkdir /data
VOLUME /data
WORKDIR /data
EXPOSE 6379
CMD ["redis-server"]
`
	// warmRecipe starts FROM the Go image and builds the duel example as
	// the Dockerfile does, only to keep the module cache and the build
	// cache (the standard library, the dependencies) in the image: the
	// Dockerfile's own build then compiles only what changed. Without it
	// each build compiled everything, minutes on a busy machine.
	warmRecipe = `FROM %[1]s
WORKDIR /warm
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /dev/null ./examples/duel \
 && cd / && rm -rf /warm
WORKDIR /go
`
	nginxRecipe = `FROM %[1]s
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends nginx >/dev/null \
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/* /etc/nginx/conf.d/* \
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
`
)

// BaseImages returns the local base images, building those this machine
// does not have yet (minutes the first time: debootstrap, apt, the Go
// toolchain, and a first build of the module at module, the directory of
// its go.mod, whose caches the Go image keeps; that one is built again
// when go.mod or go.sum change). Building needs root and debootstrap;
// without them the test is skipped, or failed under CI. Processes building
// at once wait for each other.
func BaseImages(t testing.TB, module string) Images {
	t.Helper()
	NeedEngine(t)
	unlock, err := testbin.LockFile(filepath.Join(os.TempDir(), "muster-docker-images.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	b := &builder{t: t}
	rootfs := b.rootfs()
	ca, err := extraCAs()
	if err != nil {
		t.Fatal(err)
	}
	debian := b.image("debian", debianRecipe, rootfs, ca, "")
	goroot := runtime.GOROOT()
	version, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		t.Fatalf("the Go toolchain for the build stage: %v", err)
	}
	golang := b.image("golang", goRecipe, debian, nil, goroot, string(version))
	mod, err := os.ReadFile(filepath.Join(module, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(module, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	return Images{
		Go:    b.image("golang-warm", warmRecipe, golang, nil, module, string(mod), string(sum)),
		Redis: b.image("redis", redisRecipe, debian, nil, ""),
		Nginx: b.image("nginx", nginxRecipe, debian, nil, ""),
	}
}

// builder builds the images of one BaseImages call.
type builder struct {
	t testing.TB
}

// tag returns the local tag of image name built from the given recipe
// parts: a change to any of them makes a new tag.
func tag(name string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return "muster-local/" + name + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// exists reports whether the engine has image ref.
func exists(ref string) bool {
	_, err := docker(context.Background(), nil, "image", "inspect", "--format", "{{.Id}}", ref)
	return err == nil
}

// rootfs returns the Debian root file system image, made with debootstrap
// and docker import when missing.
func (b *builder) rootfs() string {
	b.t.Helper()
	args := []string{"--variant=minbase", "--include=ca-certificates", suite}
	ref := tag("debian-rootfs", append(args, mirror, "no .deb")...)
	if exists(ref) {
		return ref
	}
	if os.Geteuid() != 0 {
		testbin.Unavailable(b.t, "building the base image %s needs root (debootstrap)", ref)
	}
	bin, err := exec.LookPath("debootstrap")
	if err != nil {
		testbin.Unavailable(b.t, "debootstrap is not on PATH (to build the base image %s)", ref)
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "muster-rootfs-")
	if err != nil {
		b.t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(args, dir, mirror)...).CombinedOutput()
	if err != nil {
		b.t.Fatalf("debootstrap: %v\n%s", err, lastLines(string(out), 20))
	}
	// The packages debootstrap downloaded are not part of the system.
	debs, _ := filepath.Glob(filepath.Join(dir, "var", "cache", "apt", "archives", "*.deb"))
	for _, d := range debs {
		if err := os.Remove(d); err != nil {
			b.t.Fatal(err)
		}
	}
	imp := exec.CommandContext(ctx, "sh", "-c", `tar -C "$1" -c . | docker import - "$2"`, "sh", dir, ref)
	if out, err := imp.CombinedOutput(); err != nil {
		b.t.Fatalf("docker import: %v\n%s", err, out)
	}
	b.t.Logf("built %s (debootstrap %s) in %v", ref, suite, time.Since(start).Round(time.Second))
	return ref
}

// image returns the image name built by recipe from base, made when
// missing. The build context is dir, or a new directory holding files
// (path → content) when dir is "". Extra parts (a version) go into the tag.
func (b *builder) image(name, recipe, base string, files map[string][]byte, dir string, extra ...string) string {
	b.t.Helper()
	dockerfile := fmt.Sprintf(recipe, base)
	parts := append([]string{dockerfile}, extra...)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		parts = append(parts, p, string(files[p]))
	}
	ref := tag(name, parts...)
	if exists(ref) {
		return ref
	}
	start := time.Now()
	if dir == "" {
		dir = b.t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "ca"), 0o755); err != nil {
			b.t.Fatal(err)
		}
		for p, data := range files {
			if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "build", "-q", "-t", ref, "-f", "-", dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	cmd.Stdin = strings.NewReader(dockerfile)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.t.Fatalf("docker build %s: %v\n%s", ref, err, lastLines(string(out), 20))
	}
	b.t.Logf("built %s in %v", ref, time.Since(start).Round(time.Second))
	return ref
}

// extraCAs returns the certificates this machine trusts beyond Debian's
// (/usr/local/share/ca-certificates), as files of the build context's ca/
// directory: a build step that reaches the Go module proxy through this
// machine's network trusts what the machine trusts.
func extraCAs() (map[string][]byte, error) {
	const dir = "/usr/local/share/ca-certificates"
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return files, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".crt") {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			files["ca/"+e.Name()] = data
		}
	}
	return files, nil
}
